/**
 * The program editor: `<reuseport-editor kernel="6.18" sockets="4" example="cid">`.
 *
 * The reader pastes a classic BPF program (bpf_asm text, the C array
 * `tcpdump -dd` prints, `tcpdump -ddd`'s numbers, or JSON), says the group
 * (protocol, sockets, SO_REUSEPORT, address, port, kernel, hash secret),
 * gives datagrams or generates QUIC ones, and sees where each goes, with the
 * model's whole lookup for any of them in the explain card.
 *
 * Everything that decides is the model's, through the lookup package: the
 * program's reader (`readProgram`, naming the line), the call log's replay
 * (`Host`: the attach accepted, or refused with the kernel's rule), each
 * datagram's lookup and the program's run (`Host.lookup`), and the QUIC
 * packets' bytes (`quicPacket`). This file keeps the form's state and asks.
 *
 * States (`data-state` on the element): `loading`, `routed` (the program is
 * attached and the datagrams are routed), `refused` (the kernel refuses the
 * program: the group hashes, and the datagrams are routed so), `bad-program`
 * (the text is not a program: nothing is routed), `bad-group` (a field of
 * the group is not valid), `bad-maps` (the eBPF object's kind, seed or maps
 * are not valid: nothing is routed), `disposed`.
 *
 * An ELF object (dropped, picked, or the nginx example) is read by the
 * model (`readEbpf`); its maps start as `verify --program` fills live ones
 * and the reader edits them. Each datagram then runs the program in a group
 * holding the maps as the previous datagram's run left them
 * (`Group.explainCtx`, `Group.ebpfMapsAfter`), and the card shows the run.
 */
import { Group, loadModel, profiles } from '../model/index';
import { Host, loadLookup, type LookupExplain } from '../model/lookup';
import { cidProgram, lineOf, parseDatagrams, quicPacket, readProgram, type ReadProgram } from '../model/editor';
import { sayEbpfEnd, sayRefusal, sayUi, sayUiCount, say, type Lang } from '../model/messages';
import type { Refusal } from '../model/generated/message/Refusal';
import { renderEditorRoutes, type EditorRouteText } from '../render/editor';
import { renderExplain, type ExplainCardText } from '../render/explain-card';
import { renderTextTable } from '../render/table';
import { select } from 'd3';
import type { Explain } from '../model/generated/Explain';
import type { EbpfRun } from '../model/generated/EbpfRun';
import type { MapFill } from '../model/generated/MapFill';
import type { PacketCtx } from '../model/generated/PacketCtx';
import type { Tuple } from '../model/generated/Tuple';
import type { Program } from '../model/generated/Program';
import { mapsAfterTables } from '../scene/ebpf-run-view';
import { EbpfPanel } from './editor-ebpf';
import { explainView } from '../scene/explain-view';
import {
  MAX_DATAGRAMS,
  MAX_FLOWS,
  MAX_SOCKETS,
  datagramLine,
  editorLog,
  explainRow,
  perSocket,
  quicFlows,
  refusalLine,
  routeRow,
  type EditorGroup,
  type QuicFlows,
  type RouteRow,
} from '../scene/editor-view';
import { hex32, parseHex32 } from '../hex';
import { defineIsland, emit, hostOf, islandElement } from './element';
import { el, field, h } from './dom';
import { pageLang } from './site';

/** The programs the editor can start from. */
export type EditorExample = 'cid' | 'mod' | 'cpu';
const EXAMPLES: readonly EditorExample[] = ['cid', 'mod', 'cpu'];

/** Options of the editor. */
export interface EditorOptions {
  /** Kernel profile or release. @default "6.18" */
  kernel?: string;
  /** Sockets in the group, 1 to {@link MAX_SOCKETS}. @default 4 */
  sockets?: number;
  /** The program the editor starts with. @default "cid" */
  example?: EditorExample;
}

/** Where the editor is (see the module documentation). */
export type EditorState = 'loading' | 'routed' | 'refused' | 'bad-program' | 'bad-group' | 'bad-maps' | 'disposed';

/** How the group's eBPF run on a packet stopped when it does not decide, or null (it decided, or it cannot run at all). */
function stoppedRun(grp: Group, tuple: Tuple, ctx: PacketCtx): Exclude<EbpfRun['end'], { kind: 'returned' }> | null {
  try {
    const end = grp.ebpfRun(tuple, ctx)?.end;
    return end && end.kind !== 'returned' ? end : null;
  } catch {
    return null;
  }
}

/** The example programs: the connection-ID program is the model's; the others are the selftests', as bpf_asm. */
function exampleText(e: EditorExample): string {
  switch (e) {
    case 'cid':
      return cidProgram();
    case 'mod':
      return '; tools/testing/selftests/net/reuseport_bpf.c: the first payload word mod 4\n        ld [0]\n        mod #4\n        ret a\n';
    default:
      return '; tools/testing/selftests/net/reuseport_bpf_cpu.c: the receiving CPU\n        ld #cpu\n        ret a\n';
  }
}

/** The options as given, or the sentence (in `lang`) naming the one that is wrong. */
function checkOptions(o: EditorOptions, lang: Lang): Required<EditorOptions> {
  const sockets = o.sockets ?? 4;
  if (!Number.isInteger(sockets) || sockets < 1 || sockets > MAX_SOCKETS)
    throw new Error(sayUi(lang, 'editor.option_sockets', { max: MAX_SOCKETS, value: String(o.sockets) }));
  const example = o.example ?? 'cid';
  if (!EXAMPLES.includes(example)) throw new Error(sayUi(lang, 'editor.option_example', { value: String(example) }));
  return { kernel: o.kernel ?? '6.18', sockets, example };
}

/** The program editor on a page; made by {@link ProgramEditor.mount}, removed by {@link ProgramEditor.dispose}. */
export class ProgramEditor {
  static #uid = 0;

  readonly #el: HTMLElement;
  readonly #lang: Lang;
  readonly #id: string;
  readonly #ac = new AbortController();

  readonly #program: HTMLTextAreaElement;
  readonly #programStatus: HTMLElement;
  readonly #proto: HTMLSelectElement;
  readonly #sockets: HTMLInputElement;
  readonly #reuseport: HTMLInputElement;
  readonly #bind: HTMLInputElement;
  readonly #port: HTMLInputElement;
  readonly #kernel: HTMLSelectElement;
  readonly #secret: HTMLInputElement;
  readonly #groupStatus: HTMLElement;
  readonly #packets: HTMLTextAreaElement;
  readonly #gen: {
    form: HTMLSelectElement;
    flows: HTMLInputElement;
    client: HTMLInputElement;
    sport: HTMLInputElement;
    server: HTMLInputElement;
    cidLen: HTMLInputElement;
    names: HTMLInputElement;
  };
  readonly #live: HTMLElement;
  /** The label of the generator's "ID names the socket" box: its words follow the program attached. */
  readonly #namesLabel: HTMLLabelElement;
  readonly #results: HTMLElement;
  readonly #card: HTMLElement;

  readonly #ebpf: EbpfPanel;

  #state: EditorState = 'loading';
  #generated = 0;
  /** The last run's lookups by packets-field line, for the card. */
  #answers = new Map<number, LookupExplain>();
  /** The last run's eBPF records by line: the group's record and the maps after the run. */
  #ebpfAnswers = new Map<number, { explain: Explain; mapsAfter: MapFill[] | null }>();

  /** Loads the model's packages and shows the editor under `el`, routed once. */
  static async mount(el: HTMLElement, options: EditorOptions = {}): Promise<ProgramEditor> {
    const o = checkOptions(options, pageLang(el));
    await Promise.all([loadModel(), loadLookup()]);
    const w = new ProgramEditor(el, o);
    w.route();
    return w;
  }

  private constructor(root: HTMLElement, o: Required<EditorOptions>) {
    this.#el = root;
    this.#lang = pageLang(root);
    this.#id = `rl-editor-${ProgramEditor.#uid++}`;
    const t = (k: Parameters<typeof sayUi>[1], f: Record<string, string | number> = {}) => sayUi(this.#lang, k, f);
    const id = this.#id;
    const on = { signal: this.#ac.signal };
    const box = root.appendChild(h('div', 'rl-editor'));

    // The program.
    const prog = box.appendChild(el('fieldset', { class: 'rl-ed-program' }, el('legend', {}, t('editor.program'))));
    const examples = prog.appendChild(h('div', 'rl-ed-examples', undefined, { role: 'group', 'aria-label': t('editor.examples') }));
    for (const e of EXAMPLES) {
      const b = examples.appendChild(h('button', '', t(`editor.example_${e}`), { type: 'button' }));
      b.dataset.example = e;
      b.addEventListener(
        'click',
        () => {
          this.#program.value = exampleText(e);
          this.#ebpf.useText();
          this.route();
        },
        on,
      );
    }
    this.#program = h('textarea', 'rl-mono', undefined, { rows: '12', spellcheck: 'false', autocomplete: 'off' });
    this.#program.value = exampleText(o.example);
    prog.append(field(`${id}-program`, t('editor.program_label'), this.#program, t('editor.program_hint')));
    this.#programStatus = prog.appendChild(h('p', 'rl-ed-status', '', { id: `${id}-program-status` }));
    this.#ebpf = new EbpfPanel(prog, this.#lang, id, this.#ac.signal, {
      changed: () => this.route(),
      // A new object: datagrams whose IDs carry its map's keys, then routed.
      loaded: () => {
        this.#generate(true);
        this.route();
      },
      sockets: () => {
        const n = Number(this.#sockets.value);
        return Number.isInteger(n) && n >= 1 && n <= MAX_SOCKETS ? n : 1;
      },
    });

    // The group.
    const grp = box.appendChild(el('fieldset', { class: 'rl-ed-group' }, el('legend', {}, t('editor.group'))));
    const row = grp.appendChild(h('div', 'rl-ed-row'));
    this.#proto = h('select');
    for (const p of ['udp', 'tcp']) this.#proto.append(el('option', { value: p }, p.toUpperCase()));
    row.append(field(`${id}-proto`, t('editor.proto'), this.#proto));
    this.#sockets = h('input', '', undefined, { type: 'number', min: '1', max: String(MAX_SOCKETS), step: '1', value: String(o.sockets) });
    row.append(field(`${id}-sockets`, t('editor.sockets'), this.#sockets, t('editor.sockets_hint', { max: MAX_SOCKETS })));
    this.#bind = h('input', 'rl-mono', undefined, { type: 'text', value: '0.0.0.0', spellcheck: 'false' });
    row.append(field(`${id}-bind`, t('editor.bind'), this.#bind));
    this.#port = h('input', '', undefined, { type: 'number', min: '1', max: '65535', step: '1', value: '443' });
    row.append(field(`${id}-port`, t('editor.port'), this.#port));
    const row2 = grp.appendChild(h('div', 'rl-ed-row'));
    this.#kernel = h('select');
    // Programs attach to groups: 4.5 (UDP) and 4.6 (TCP) on. The model refuses an era without them, and says so.
    for (const p of profiles()) {
      const k = `${p.release.major}.${p.release.minor}`;
      this.#kernel.append(el('option', { value: k }, k));
    }
    this.#kernel.value = [...this.#kernel.options].some((x) => x.value === o.kernel) ? o.kernel : '6.18';
    row2.append(field(`${id}-kernel`, t('editor.kernel'), this.#kernel));
    this.#secret = h('input', 'rl-mono', undefined, { type: 'text', value: hex32(0x5eed0001), spellcheck: 'false' });
    row2.append(field(`${id}-secret`, t('editor.secret'), this.#secret, t('editor.secret_hint')));
    this.#reuseport = h('input', '', undefined, { type: 'checkbox', id: `${id}-reuseport` });
    this.#reuseport.checked = true;
    row2.append(el('div', { class: 'rl-field rl-ed-check' }, this.#reuseport, el('label', { htmlFor: `${id}-reuseport` }, t('editor.reuseport'))));
    this.#groupStatus = grp.appendChild(h('div', 'rl-ed-status', undefined, { id: `${id}-group-status` }));

    // The datagrams, and the QUIC generator.
    const pk = box.appendChild(el('fieldset', { class: 'rl-ed-packets' }, el('legend', {}, t('editor.packets'))));
    this.#packets = h('textarea', 'rl-mono', undefined, { rows: '8', spellcheck: 'false', autocomplete: 'off', wrap: 'off' });
    pk.append(field(`${id}-packets`, t('editor.packets_label'), this.#packets, t('editor.packets_hint', { max: MAX_DATAGRAMS })));
    const gen = pk.appendChild(el('details', { class: 'rl-ed-gen' }, el('summary', {}, t('editor.generate'))));
    gen.open = true;
    const grow = gen.appendChild(h('div', 'rl-ed-row'));
    const form = h('select');
    for (const f of ['initial', 'handshake', 'short'] as const) form.append(el('option', { value: f }, t(`editor.form_${f}`)));
    form.value = 'short';
    grow.append(field(`${id}-form`, t('editor.gen_form'), form));
    const flows = h('input', '', undefined, { type: 'number', min: '1', max: String(MAX_FLOWS), step: '1', value: '8' });
    grow.append(field(`${id}-flows`, t('editor.flows'), flows, t('editor.flows_hint', { max: MAX_FLOWS })));
    const client = h('input', 'rl-mono', undefined, { type: 'text', value: '192.0.2.10', spellcheck: 'false' });
    grow.append(field(`${id}-client`, t('editor.client'), client));
    const sport = h('input', '', undefined, { type: 'number', min: '1', max: '65535', step: '1', value: '40000' });
    grow.append(field(`${id}-sport`, t('editor.first_port'), sport));
    const server = h('input', 'rl-mono', undefined, { type: 'text', value: '127.0.0.1', spellcheck: 'false' });
    grow.append(field(`${id}-server`, t('editor.server'), server, t('editor.server_hint')));
    const cidLen = h('input', '', undefined, { type: 'number', min: '0', max: '20', step: '1', value: '20' });
    grow.append(field(`${id}-cidlen`, t('editor.cid_length'), cidLen, t('editor.cid_length_hint')));
    const names = h('input', '', undefined, { type: 'checkbox', id: `${id}-names` });
    names.checked = true;
    this.#namesLabel = el('label', { htmlFor: `${id}-names` }, t('editor.cid_names'));
    gen.append(el('div', { class: 'rl-field rl-ed-check' }, names, this.#namesLabel));
    this.#gen = { form, flows, client, sport, server, cidLen, names };
    const genRow = gen.appendChild(h('div', 'rl-ed-actions'));
    const add = genRow.appendChild(h('button', '', t('editor.add'), { type: 'button' }));
    add.addEventListener('click', () => this.#generate(false), on);
    const replace = genRow.appendChild(h('button', '', t('editor.replace'), { type: 'button' }));
    replace.addEventListener('click', () => this.#generate(true), on);

    const actions = box.appendChild(h('div', 'rl-ed-actions'));
    const send = actions.appendChild(h('button', 'rl-primary', t('editor.send'), { type: 'button' }));
    send.addEventListener('click', () => this.route(), on);
    // Enter in a one-line field routes; Ctrl+Enter routes from the text areas.
    box.addEventListener(
      'keydown',
      (e) => {
        if (e.key !== 'Enter') return;
        const tgt = e.target as HTMLElement;
        if ((tgt.tagName === 'INPUT' && (tgt as HTMLInputElement).type !== 'checkbox') || (tgt.tagName === 'TEXTAREA' && (e.ctrlKey || e.metaKey))) {
          e.preventDefault();
          this.route();
        }
      },
      on,
    );
    for (const c of [this.#proto, this.#kernel, this.#reuseport]) c.addEventListener('change', () => this.route(), on);

    this.#live = box.appendChild(h('div', 'rl-ed-live', undefined, { role: 'status', 'aria-live': 'polite' }));
    this.#results = box.appendChild(h('div', 'rl-ed-results'));
    this.#card = box.appendChild(h('div', 'rl-ed-card rl-explain', undefined, { id: `${id}-card`, tabindex: '-1' }));
    this.#generate(true);
  }

  /** The state the editor is in. */
  get state(): EditorState {
    return this.#state;
  }

  #setState(s: EditorState): void {
    this.#state = s;
    hostOf(this.#el).dataset.state = s;
  }

  /** The group as the fields say, or the sentence that says which field is wrong. */
  #group(): EditorGroup | string {
    const lang = this.#lang;
    const whole = (input: HTMLInputElement, label: Parameters<typeof sayUi>[1], min: number, max: number): number | string => {
      const v = Number(input.value);
      return Number.isInteger(v) && v >= min && v <= max && input.value.trim() !== ''
        ? v
        : sayUi(lang, 'editor.bad_number', { field: sayUi(lang, label), min, max });
    };
    const sockets = whole(this.#sockets, 'editor.sockets', 1, MAX_SOCKETS);
    if (typeof sockets === 'string') return sockets;
    const port = whole(this.#port, 'editor.port', 1, 65535);
    if (typeof port === 'string') return port;
    const bind = this.#bind.value.trim();
    if (bind === '') return sayUi(lang, 'editor.bad_bind');
    return { proto: this.#proto.value === 'tcp' ? 'tcp' : 'udp', sockets, reuseport: this.#reuseport.checked, bind, port };
  }

  /** Adds (or, with `replace`, puts) the generator's flows in the datagrams field: the bytes are the model's. */
  #generate(replace: boolean): void {
    const g = this.#group();
    const n = Number(this.#gen.flows.value);
    const len = Number(this.#gen.cidLen.value);
    const sport = Number(this.#gen.sport.value);
    const lang = this.#lang;
    const bad =
      !Number.isInteger(n) || n < 1 || n > MAX_FLOWS
        ? sayUi(lang, 'editor.bad_number', { field: sayUi(lang, 'editor.flows'), min: 1, max: MAX_FLOWS })
        : !Number.isInteger(len) || len < 0 || len > 20
          ? sayUi(lang, 'editor.bad_number', { field: sayUi(lang, 'editor.cid_length'), min: 0, max: 20 })
          : !Number.isInteger(sport) || sport < 1 || sport > 65535
            ? sayUi(lang, 'editor.bad_number', { field: sayUi(lang, 'editor.first_port'), min: 1, max: 65535 })
            : typeof g === 'string'
              ? g
              : null;
    if (bad !== null || typeof g === 'string') {
      this.#live.replaceChildren(h('p', 'rl-error', bad ?? ''));
      return;
    }
    const o: QuicFlows = {
      form: this.#gen.form.value as QuicFlows['form'],
      flows: n,
      saddr: this.#gen.client.value.trim(),
      sport,
      daddr: this.#gen.server.value.trim(),
      dport: g.port,
      cidLength: len,
      cidNamesSocket: this.#gen.names.checked,
      sockets: g.sockets,
      seed: 0x51c0 + this.#generated++,
      cidKeys: this.#ebpf.cidKeys() ?? undefined,
    };
    const lines = quicFlows(o).map((f) => datagramLine(f, quicPacket(f.spec)));
    const kept = replace ? '' : this.#packets.value.replace(/\s*$/, '');
    this.#packets.value = [kept, ...lines].filter((l) => l !== '').join('\n') + '\n';
    if (!replace) this.route();
  }

  /** Reads the program, replays the group's calls and routes every datagram; sets the state. */
  route(): void {
    if (this.#state === 'disposed') return;
    const lang = this.#lang;
    this.#results.replaceChildren();
    this.#card.replaceChildren();
    this.#answers.clear();
    this.#ebpfAnswers.clear();
    this.#program.removeAttribute('aria-invalid');
    this.#namesLabel.textContent = sayUi(lang, this.#ebpf.active ? 'editor.cid_names_ebpf' : 'editor.cid_names');
    // The program: the ELF object's, its maps checked by the model; or the text's, the model's reader naming the line.
    let read: ReadProgram;
    if (this.#ebpf.active) {
      const c = this.#ebpf.choice();
      if ('error' in c) {
        this.#programStatus.className = 'rl-ed-status';
        this.#programStatus.textContent = sayUi(lang, 'editor.elf_attached_not');
        this.#groupStatus.replaceChildren();
        this.#live.textContent = c.error;
        this.#setState('bad-maps');
        emit(this.#el, 'stepped', { state: this.#state });
        return;
      }
      read = { program: c.program, lines: [], form: 'json' };
    } else {
      const r = this.#readText();
      if (r === null) return;
      read = r;
    }
    const insns = read.program.kind === 'cbpf' ? read.program.insns.length : 0;
    this.#programStatus.className = 'rl-ed-status';
    this.#programStatus.textContent =
      read.program.kind === 'cbpf'
        ? sayUiCount(lang, 'editor.read', insns, { form: sayUi(lang, read.form === 'json' ? 'editor.form_json' : 'editor.form_text') })
        : this.#ebpf.active
          ? sayUi(lang, 'editor.elf_attached', { name: read.program.kind === 'ebpf' ? read.program.program.name : '' })
          : sayUi(lang, 'editor.read_other', { kind: read.program.kind });
    const g = this.#group();
    const secret = parseHex32(this.#secret.value.trim());
    if (typeof g === 'string' || secret === undefined) {
      const msg = typeof g === 'string' ? g : sayUi(lang, 'editor.bad_secret');
      this.#groupStatus.replaceChildren(h('p', 'rl-error', msg));
      this.#live.textContent = msg;
      this.#setState('bad-group');
      return;
    }
    let host: Host;
    try {
      host = new Host(this.#kernel.value, editorLog(g, read.program, secret));
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      this.#groupStatus.replaceChildren(h('p', 'rl-error', msg));
      this.#live.textContent = msg;
      this.#setState('bad-group');
      return;
    }
    try {
      const refused = this.#sayCalls(host, read, g);
      this.#routeAll(host, g, refused, refused || read.program.kind !== 'ebpf' ? null : { program: read.program, secret });
    } finally {
      host.dispose();
    }
  }

  /** The text program as the model reads it, or null after saying which line is wrong (state `bad-program`). */
  #readText(): ReadProgram | null {
    const lang = this.#lang;
    try {
      return readProgram(this.#program.value);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      const line = lineOf(msg);
      this.#program.setAttribute('aria-invalid', 'true');
      this.#programStatus.className = 'rl-ed-status rl-error';
      this.#programStatus.textContent = line === null ? msg : sayUi(lang, 'editor.bad_line', { line, message: msg.replace(/^line \d+: /, '') });
      this.#groupStatus.replaceChildren();
      this.#live.textContent = this.#programStatus.textContent;
      this.#setState('bad-program');
      emit(this.#el, 'stepped', { state: this.#state, line });
      return null;
    }
  }

  /** Says what the calls got: the attach accepted or refused (with the program's line), and any other refused call. Returns whether the attach was refused. */
  #sayCalls(host: Host, read: ReadProgram, g: EditorGroup): boolean {
    const lang = this.#lang;
    const answers = host.answers();
    const calls = host.calls().calls;
    const out: HTMLElement[] = [];
    let attachRefused = false;
    answers.forEach((a, i) => {
      if (!a) return;
      const c = calls[i]!;
      const isAttach = c.call === 'setsockopt' && 'attachReuseport' in c.opt;
      if (isAttach) {
        attachRefused = true;
        const line = refusalLine(a, read.lines);
        const p = h('p', 'rl-error rl-ed-refused', this.#refusal(a, line));
        out.push(p);
        if (line !== null) this.#program.setAttribute('aria-invalid', 'true');
      } else {
        out.push(
          h('p', 'rl-ed-note', sayUi(lang, 'editor.other_refused', { socket: 'fd' in c ? c.fd : i, call: c.call, errno: a.errno, rule: sayRefusal(lang, a) })),
        );
      }
    });
    if (!attachRefused) out.unshift(h('p', 'rl-ed-ok', sayUi(lang, g.proto === 'tcp' ? 'editor.attached_tcp' : 'editor.attached_udp')));
    this.#groupStatus.replaceChildren(...out);
    return attachRefused;
  }

  #refusal(a: Refusal, line: number | null): string {
    const lang = this.#lang;
    const at = line === null ? '' : sayUi(lang, 'editor.at_line', { line });
    return sayUi(lang, 'editor.refused', { errno: a.errno, rule: sayRefusal(lang, a), at });
  }

  /**
   * Routes every datagram. With an attached eBPF program (`ebpf`), a datagram
   * the host hands to the group is run in a group that holds the maps as the
   * previous datagram's run left them (the kernel's maps persist), and the
   * group's record is the row's answer.
   */
  #routeAll(host: Host, g: EditorGroup, refused: boolean, ebpf: { program: Program; secret: number } | null): void {
    const lang = this.#lang;
    const parsed = parseDatagrams(this.#packets.value, MAX_DATAGRAMS + 1);
    const over = parsed.length > MAX_DATAGRAMS;
    const rows: RouteRow[] = [];
    const bad: { line: number; error: string }[] = [];
    /** The maps as the last run left them (null: as the reader filled them). */
    let maps: MapFill[] | null = null;
    for (const p of parsed.slice(0, MAX_DATAGRAMS)) {
      if (p.error !== undefined) {
        bad.push({ line: p.line, error: p.error });
        continue;
      }
      const x = host.lookup({ proto: g.proto, tuple: p.datagram.tuple, device: null, ctx: p.datagram.ctx });
      if (ebpf && ebpf.program.kind === 'ebpf' && x.group) {
        const program: Program = { ...ebpf.program, maps: maps ?? ebpf.program.maps };
        const grp = new Group(this.#kernel.value, {
          proto: g.proto,
          listeners: g.sockets,
          bind: g.bind,
          port: g.port,
          keys: { v4: ebpf.secret >>> 0, v6Outer: ebpf.secret >>> 0, v6Inner: 0 },
          program,
        });
        try {
          const e = grp.explainCtx(p.datagram.tuple, p.datagram.ctx);
          const after = grp.ebpfMapsAfter(p.datagram.tuple, p.datagram.ctx);
          if (after) maps = after;
          this.#ebpfAnswers.set(p.line, { explain: e, mapsAfter: after });
          rows.push(explainRow(p.line, e, p.datagram.ctx.payload as number[] | number | null));
        } catch (err) {
          // A run that stops undecided is said from its record, in the page's language; any other refusal is the model's sentence.
          const end = stoppedRun(grp, p.datagram.tuple, p.datagram.ctx);
          const message = end ? sayEbpfEnd(lang, end) : err instanceof Error ? err.message : String(err);
          bad.push({ line: p.line, error: sayUi(lang, 'editor.run_undecided', { message }) });
        } finally {
          grp.dispose();
        }
        continue;
      }
      this.#answers.set(p.line, x);
      rows.push(routeRow(p.line, x));
    }
    this.#packets.toggleAttribute('aria-invalid', bad.length > 0);
    const said: string[] = [sayUiCount(lang, 'editor.routed', rows.length)];
    if (bad.length > 0) said.push(sayUiCount(lang, 'editor.bad_lines', bad.length));
    if (over) said.push(sayUi(lang, 'editor.too_many', { max: MAX_DATAGRAMS }));
    this.#live.textContent = said.join(' ');
    if (bad.length > 0) {
      const ul = this.#results.appendChild(h('ul', 'rl-ed-bad'));
      for (const b of bad) ul.append(h('li', 'rl-error', sayUi(lang, 'editor.bad_line', { line: b.line, message: b.error })));
    }
    const text = routeText(lang);
    renderEditorRoutes(this.#results, { rows, perSocket: perSocket(rows, g.sockets) }, text, (line) => this.#show(line, true));
    if (rows.length > 0) this.#show(rows[0]!.line, false);
    this.#setState(refused ? 'refused' : 'routed');
    emit(this.#el, 'stepped', { state: this.#state, routed: rows.length, bad: bad.length });
  }

  /** The explain card of the datagram on `line`; `focus` moves focus to it. */
  #show(line: number, focus: boolean): void {
    const x = this.#answers.get(line);
    const run = this.#ebpfAnswers.get(line);
    this.#card.replaceChildren();
    const lang = this.#lang;
    if (run) {
      this.#card.append(h('h3', '', sayUi(lang, 'editor.card_title', { line })));
      for (const b of this.#results.querySelectorAll<HTMLButtonElement>('button[data-line]'))
        b.setAttribute('aria-pressed', String(b.dataset.line === String(line)));
      renderExplain(this.#card.appendChild(h('div')), explainView(run.explain, lang), 4, cardText(lang));
      if (run.mapsAfter) {
        const sec = this.#card.appendChild(h('section', 'rl-section rl-ed-maps-after'));
        sec.append(h('h4', '', sayUi(lang, 'editor.maps_after')), h('p', 'rl-hint', sayUi(lang, 'editor.maps_after_lead')));
        for (const t of mapsAfterTables(run.mapsAfter, lang)) renderTextTable(select(sec), t);
      }
      if (focus) this.#card.focus();
      return;
    }
    if (!x) return;
    this.#card.append(h('h3', '', sayUi(lang, 'editor.card_title', { line })));
    for (const b of this.#results.querySelectorAll<HTMLButtonElement>('button[data-line]'))
      b.setAttribute('aria-pressed', String(b.dataset.line === String(line)));
    if (x.group) renderExplain(this.#card.appendChild(h('div')), explainView(x.group.explain, lang), 4, cardText(lang));
    else this.#card.append(h('p', '', sayUi(lang, 'editor.no_group')));
    if (focus) this.#card.focus();
  }

  dispose(): void {
    this.#ac.abort();
    this.#setState('disposed');
    this.#el.replaceChildren();
  }
}

function cardText(lang: Lang): ExplainCardText {
  return {
    kernel: (source) => sayUi(lang, 'editor.card_kernel', { source }),
    fallback: (text) => sayUi(lang, 'editor.card_fallback', { text }),
    caveats: sayUi(lang, 'editor.card_caveats'),
  };
}

function routeText(lang: Lang): EditorRouteText {
  return {
    perSocket: sayUi(lang, 'editor.per_socket'),
    perSocketHead: [sayUi(lang, 'editor.col_to'), sayUi(lang, 'editor.col_count')],
    socket: (n) => sayUi(lang, 'editor.socket', { n }),
    none: sayUi(lang, 'editor.dropped'),
    routes: sayUi(lang, 'editor.routes'),
    head: [
      sayUi(lang, 'editor.col_line'),
      sayUi(lang, 'editor.col_from'),
      sayUi(lang, 'editor.col_payload'),
      sayUi(lang, 'editor.col_returned'),
      sayUi(lang, 'editor.col_outcome'),
      sayUi(lang, 'editor.col_to'),
    ],
    payload: (hex, n) => (n === 0 ? sayUi(lang, 'editor.no_payload') : sayUi(lang, 'editor.payload', { hex, n })),
    returned: (r) => (r === null ? sayUi(lang, 'editor.no_program') : say(lang, 'program_return', r)),
    outcome: (o) => (o === null ? '' : say(lang, 'program_outcome', o)),
    show: (line) => sayUi(lang, 'editor.show', { line }),
  };
}

/** Mounts the editor into `el`; returns `dispose`. */
export async function mountEditor(el: HTMLElement, options: EditorOptions = {}): Promise<() => void> {
  const w = await ProgramEditor.mount(el, options);
  return () => w.dispose();
}

function readEditor(el: HTMLElement): EditorOptions {
  const sockets = el.getAttribute('sockets');
  return {
    kernel: el.getAttribute('kernel') ?? undefined,
    sockets: sockets === null || sockets.trim() === '' ? undefined : Number(sockets),
    example: (el.getAttribute('example') as EditorExample | null) ?? undefined,
  };
}

/** Registers `<reuseport-editor>` once. */
export function defineEditorElement(): void {
  defineIsland('reuseport-editor', islandElement(mountEditor, readEditor, ['kernel', 'sockets', 'example']));
}
