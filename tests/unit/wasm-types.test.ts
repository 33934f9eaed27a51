/**
 * The wasm packages' generated declarations name the model's types, not `any`
 * (wasm/bindings: `unchecked_param_type` / `unchecked_return_type`). These
 * checks are types: `tsc --noEmit` (part of npm test) fails when a
 * declaration falls back to `any`; vitest only runs the file.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type * as core from '../../src/model/pkg/reuseport.js';
import type * as big from '../../src/model/pkg-lookup/reuseport.js';
import type { Change, Explain, GroupSummary, Profile, Tuple } from '../../src/model/index';
import type { ReadSummary, AnswerRequest } from '../../src/model/paste-protocol';
import type { CuratedView } from '../../src/model/generated/CuratedView';
import type { Scenario } from '../../src/model/generated/Scenario';
import type { SimReport } from '../../src/model/generated/SimReport';
import type { CallLog, CallResult, LookupExplain, LookupRules, Packet } from '../../src/model/lookup';

describe('wasm declarations carry the model types', () => {
  it('core package: free functions and the Group handle', () => {
    expectTypeOf<ReturnType<typeof core.profiles>>().toEqualTypeOf<Profile[]>();
    expectTypeOf<ReturnType<typeof core.resolveProfile>>().toEqualTypeOf<Profile>();
    expectTypeOf<Parameters<core.Group['explain']>[0]>().toEqualTypeOf<Tuple>();
    expectTypeOf<ReturnType<core.Group['explain']>>().toEqualTypeOf<Explain>();
    expectTypeOf<ReturnType<core.Group['summary']>>().toEqualTypeOf<GroupSummary>();
    expectTypeOf<ReturnType<core.Group['join']>>().toEqualTypeOf<Change>();
  });

  it('lookup package: the simulator, the key search and the paste session', () => {
    expectTypeOf<ReturnType<typeof big.curatedScenarios>>().toEqualTypeOf<CuratedView[]>();
    expectTypeOf<ConstructorParameters<typeof big.Simulation>[0]>().toEqualTypeOf<Scenario>();
    expectTypeOf<ReturnType<big.Simulation['report']>>().toEqualTypeOf<SimReport>();
    expectTypeOf<ReturnType<big.Recovery['add']>>().toEqualTypeOf<'new' | 'duplicate' | 'uninformative'>();
    expectTypeOf<ReturnType<big.Paste['finish']>>().toEqualTypeOf<ReadSummary>();
    expectTypeOf<Parameters<big.Paste['answer']>[0]>().toEqualTypeOf<AnswerRequest>();
  });

  it('lookup package: the Host of a call log', () => {
    expectTypeOf<Parameters<big.Host['lookup']>[0]>().toEqualTypeOf<Packet>();
    expectTypeOf<ReturnType<big.Host['lookup']>>().toEqualTypeOf<LookupExplain>();
    expectTypeOf<ReturnType<big.Host['results']>>().toEqualTypeOf<CallResult[]>();
    expectTypeOf<ReturnType<big.Host['calls']>>().toEqualTypeOf<CallLog>();
    expectTypeOf<ReturnType<big.Host['rules']>>().toEqualTypeOf<LookupRules>();
  });
});
