/**
 * The program editor's eBPF part: an ELF object dropped, picked or loaded
 * from the examples, the program of it to attach (and its kind when the
 * section does not say), the seed of `bpf_get_prandom_u32`, and the maps as
 * user space filled them: which socket sits at which key.
 *
 * The model reads the object (`readEbpf`), starts the maps (`ebpfDefaultMaps`,
 * the rule `verify --program` fills live maps by), says what each map type
 * holds and checks the maps as filled (`ebpfCheckMaps`). This file keeps the
 * form's state and asks.
 */
import {
  ebpfCheckMaps,
  ebpfDefaultMaps,
  ebpfMapBounds,
  ebpfMapTypeName,
  ebpfMapTypes,
  ebpfMaxElfBytes,
  readEbpf,
  type EbpfMapType,
  type EbpfObject,
  type EbpfProgram,
  type Holds,
  type ProgKind,
} from '../model/ebpf';
import type { Program } from '../model/generated/Program';
import { sayElfError, sayMapRefusal, sayUi, sayUiCount, type Lang, type UiKey } from '../model/messages';
import { formMaps, mapForms, socketKeys, type FillProblem, type MapForm } from '../scene/ebpf-form';
import { el, field, h } from './dom';
import { siteUrl } from './site';

/** The kinds a reader can give a program whose section does not say (the model's `ProgKind`). */
const KINDS: readonly ProgKind[] = ['sk_reuseport', 'sk_reuseport_migrate', 'socket_filter'];

/** The example objects the page offers: built from tests/fixtures/ebpf by scripts/ebpf-fixtures.sh (public/examples/README.md). */
export const EXAMPLE_OBJECTS = {
  /** nginx 1.26.3's QUIC helper; nginx loads it as BPF_PROG_TYPE_SK_REUSEPORT (ngx_event_quic_bpf_code.c). */
  nginx: { file: 'examples/ngx_quic_reuseport_helper.o', kind: 'sk_reuseport' as ProgKind },
} as const;

interface MapInputs {
  form: MapForm;
  text: HTMLTextAreaElement;
  /** The definition's fields, for a map user space makes. */
  type?: HTMLSelectElement;
  key?: HTMLInputElement;
  value?: HTMLInputElement;
  max?: HTMLInputElement;
}

/** The eBPF program as the form says it, or why there is none. */
export type EbpfChoice = { program: Program } | { error: string; field: HTMLElement };

/** The ELF input (in the program's fieldset) and the object's fieldset. */
export class EbpfPanel {
  readonly #lang: Lang;
  readonly #id: string;
  readonly #signal: AbortSignal;
  readonly #changed: () => void;
  readonly #loaded: () => void;
  readonly #sockets: () => number;

  readonly #file: HTMLInputElement;
  readonly #fileStatus: HTMLElement;
  readonly #box: HTMLFieldSetElement;
  readonly #use: HTMLInputElement;
  readonly #prog: HTMLSelectElement;
  readonly #kind: HTMLSelectElement;
  readonly #seed: HTMLInputElement;
  readonly #maps: HTMLElement;
  readonly #mapsStatus: HTMLElement;

  #object: EbpfObject | null = null;
  #inputs: MapInputs[] = [];
  #types: EbpfMapType[] = [];

  /**
   * Puts the ELF input into `programBox` (a drop zone, a file picker, the
   * example) and the object's fieldset after it; `changed` routes again,
   * `loaded` is called instead when a new object is read (the editor then
   * generates datagrams for it), `sockets` is the group's size as the form
   * says it.
   */
  constructor(programBox: HTMLElement, lang: Lang, id: string, signal: AbortSignal, hooks: { changed: () => void; loaded: () => void; sockets: () => number }) {
    this.#lang = lang;
    this.#id = id;
    this.#signal = signal;
    this.#changed = hooks.changed;
    this.#loaded = hooks.loaded;
    this.#sockets = hooks.sockets;
    const t = (k: UiKey, f: Record<string, string | number> = {}) => sayUi(lang, k, f);
    const on = { signal };
    const maxKiB = Math.floor(ebpfMaxElfBytes() / 1024);

    const zone = programBox.appendChild(h('div', 'rl-ed-drop'));
    zone.append(h('p', 'rl-ed-drop-lead', t('editor.elf_drop', { max: maxKiB })));
    this.#file = h('input', '', undefined, { type: 'file', accept: '.o,.elf,.bpf,application/x-elf,application/x-object,application/octet-stream' });
    zone.append(field(`${id}-elf`, t('editor.elf_pick'), this.#file, t('editor.elf_pick_hint', { max: maxKiB })));
    const ex = zone.appendChild(h('button', '', t('editor.elf_example_nginx'), { type: 'button' }));
    ex.dataset.elfExample = 'nginx';
    this.#fileStatus = zone.appendChild(h('p', 'rl-ed-elf-status', '', { id: `${id}-elf-status` }));

    this.#file.addEventListener(
      'change',
      () => {
        const f = this.#file.files?.[0];
        if (f) void this.#openFile(f);
      },
      on,
    );
    ex.addEventListener('click', () => void this.#openExample('nginx'), on);
    // A file dropped anywhere on the program's fieldset is read as an object; a dragged text still drops into the text area.
    programBox.addEventListener(
      'dragover',
      (e) => {
        if (e.dataTransfer?.types.includes('Files')) {
          e.preventDefault();
          zone.classList.add('rl-ed-dragging');
        }
      },
      on,
    );
    programBox.addEventListener('dragleave', () => zone.classList.remove('rl-ed-dragging'), on);
    programBox.addEventListener(
      'drop',
      (e) => {
        const f = e.dataTransfer?.files[0];
        zone.classList.remove('rl-ed-dragging');
        if (!f) return;
        e.preventDefault();
        void this.#openFile(f);
      },
      on,
    );

    // The object's fieldset, shown once an object is read.
    this.#box = el('fieldset', { class: 'rl-ed-ebpf' }, el('legend', {}, t('editor.elf_object')));
    this.#box.hidden = true;
    programBox.after(this.#box);
    this.#use = h('input', '', undefined, { type: 'checkbox', id: `${id}-elf-use` });
    this.#box.append(el('div', { class: 'rl-field rl-ed-check' }, this.#use, el('label', { htmlFor: `${id}-elf-use` }, t('editor.elf_use'))));
    this.#use.addEventListener('change', () => this.#changed(), on);
    const row = this.#box.appendChild(h('div', 'rl-ed-row'));
    this.#prog = h('select');
    row.append(field(`${id}-elf-prog`, t('editor.elf_program'), this.#prog));
    this.#prog.addEventListener('change', () => this.#showProgram(), on);
    this.#kind = h('select');
    this.#kind.append(el('option', { value: '' }, t('editor.elf_kind_unsaid')));
    for (const k of KINDS) this.#kind.append(el('option', { value: k }, t(`editor.elf_kind_${k}`)));
    row.append(field(`${id}-elf-kind`, t('editor.elf_kind'), this.#kind, t('editor.elf_kind_hint')));
    this.#kind.addEventListener('change', () => this.#changed(), on);
    this.#seed = h('input', 'rl-mono', undefined, { type: 'text', value: '1', spellcheck: 'false', inputmode: 'numeric' });
    row.append(field(`${id}-elf-seed`, t('editor.elf_seed'), this.#seed, t('editor.elf_seed_hint')));
    const mapsHead = this.#box.appendChild(h('div', 'rl-ed-maps-head'));
    mapsHead.append(h('h3', '', t('editor.maps')), h('p', 'rl-hint', t('editor.maps_lead')));
    const reset = mapsHead.appendChild(h('button', '', t('editor.maps_reset'), { type: 'button' }));
    reset.addEventListener(
      'click',
      () => {
        this.#showMaps();
        this.#changed();
      },
      on,
    );
    this.#maps = this.#box.appendChild(h('div', 'rl-ed-maps'));
    this.#mapsStatus = this.#box.appendChild(h('div', 'rl-ed-status', undefined, { id: `${id}-maps-status` }));
  }

  /** Whether an object is read and the reader attaches its program (not the text's). */
  get active(): boolean {
    return this.#object !== null && this.#use.checked;
  }

  /** Turns the object off (a text example was chosen): the text program is attached. */
  useText(): void {
    this.#use.checked = false;
  }

  async #openFile(f: File): Promise<void> {
    const lang = this.#lang;
    const max = ebpfMaxElfBytes();
    if (f.size > max) {
      this.#fail(sayUi(lang, 'editor.elf_too_big', { name: f.name, size: f.size, max }));
      return;
    }
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await f.arrayBuffer());
    } catch (e) {
      this.#fail(sayUi(lang, 'editor.elf_unreadable', { name: f.name, message: e instanceof Error ? e.message : String(e) }));
      return;
    }
    if (this.#signal.aborted) return;
    this.load(f.name, bytes);
  }

  async #openExample(which: keyof typeof EXAMPLE_OBJECTS): Promise<void> {
    const ex = EXAMPLE_OBJECTS[which];
    const url = siteUrl(ex.file);
    let bytes: Uint8Array;
    try {
      const r = await fetch(url, { signal: this.#signal });
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      bytes = new Uint8Array(await r.arrayBuffer());
    } catch (e) {
      if (this.#signal.aborted) return;
      this.#fail(sayUi(this.#lang, 'editor.elf_fetch_failed', { url, message: e instanceof Error ? e.message : String(e) }));
      return;
    }
    this.load(ex.file.replace(/^.*\//, ''), bytes, ex.kind);
  }

  #fail(msg: string): void {
    this.#fileStatus.className = 'rl-ed-elf-status rl-error';
    this.#fileStatus.textContent = msg;
    this.#file.setAttribute('aria-invalid', 'true');
  }

  /** Reads `bytes` as an ELF object (the model's reader) and shows it; `kind` is given to a program whose section does not say. Returns whether it read. */
  load(name: string, bytes: Uint8Array, kind?: ProgKind): boolean {
    const lang = this.#lang;
    const read = readEbpf(bytes);
    if (read.object === null) {
      this.#fail(sayUi(lang, 'editor.elf_bad', { name, message: sayElfError(lang, read.refused) }));
      return false;
    }
    const obj: EbpfObject = read.object;
    if (obj.programs.length === 0) {
      this.#fail(sayUi(lang, 'editor.elf_no_program', { name }));
      return false;
    }
    if (kind) for (const p of obj.programs) p.kind ??= kind;
    this.#object = obj;
    this.#types = ebpfMapTypes();
    this.#file.removeAttribute('aria-invalid');
    this.#fileStatus.className = 'rl-ed-elf-status';
    this.#fileStatus.textContent = sayUiCount(lang, 'editor.elf_read', obj.programs.length, {
      name,
      size: bytes.length,
      maps: obj.maps.length,
      license: obj.license ?? '—',
    });
    this.#prog.replaceChildren(...obj.programs.map((p, i) => el('option', { value: String(i) }, `${p.name} (${p.section})`)));
    this.#box.hidden = false;
    this.#use.checked = true;
    this.#showProgram(this.#loaded);
    return true;
  }

  #program(): EbpfProgram | null {
    return this.#object?.programs[Number(this.#prog.value)] ?? null;
  }

  #showProgram(then: () => void = this.#changed): void {
    const p = this.#program();
    if (!p) return;
    this.#kind.value = p.kind ?? '';
    this.#showMaps();
    then();
  }

  #holds(mapType: number): Holds {
    return this.#types.find((x) => x.mapType === mapType)?.holds ?? 'bytes';
  }

  /** The map forms, from the model's starting maps for the group's size now. */
  #showMaps(): void {
    const p = this.#program();
    if (!p) return;
    const lang = this.#lang;
    const t = (k: UiKey, f: Record<string, string | number> = {}) => sayUi(lang, k, f);
    const forms = mapForms(p, ebpfDefaultMaps(p, this.#sockets()));
    this.#maps.replaceChildren();
    this.#inputs = [];
    if (forms.length === 0) this.#maps.append(h('p', '', t('editor.maps_none')));
    forms.forEach((form, i) => {
      const mid = `${this.#id}-map-${i}`;
      const box = this.#maps.appendChild(el('fieldset', { class: 'rl-ed-map' }, el('legend', { class: 'rl-mono' }, form.name)));
      box.dataset.map = form.name;
      const inputs: MapInputs = { form, text: h('textarea', 'rl-mono', undefined, { rows: '4', spellcheck: 'false', autocomplete: 'off', wrap: 'off' }) };
      if (form.userMade) {
        box.append(h('p', 'rl-hint', t(p.maps.some((m) => m.name === form.name) ? 'editor.map_extern' : 'editor.map_extra')));
        const row = box.appendChild(h('div', 'rl-ed-row'));
        const type = h('select');
        for (const mt of this.#types) type.append(el('option', { value: String(mt.mapType) }, mt.name));
        type.value = String(form.def.mapType);
        row.append(field(`${mid}-type`, t('editor.map_type'), type));
        const num = (v: number, min: number, max: number) =>
          h('input', '', undefined, { type: 'number', min: String(min), max: String(max), step: '1', value: String(v) });
        // The model's bounds, as its map check applies them.
        const bounds = ebpfMapBounds();
        const key = num(form.def.keySize, 1, bounds.keySize);
        const value = num(form.def.valueSize, 1, bounds.valueSize);
        const max = num(form.def.maxEntries, 1, bounds.maxEntries);
        row.append(
          field(`${mid}-key`, t('editor.map_key_size'), key),
          field(`${mid}-value`, t('editor.map_value_size'), value),
          field(`${mid}-max`, t('editor.map_max'), max),
        );
        Object.assign(inputs, { type, key, value, max });
      } else {
        box.append(
          h(
            'p',
            'rl-hint',
            t('editor.map_def', { type: ebpfMapTypeName(form.def.mapType), key: form.def.keySize, value: form.def.valueSize, max: form.def.maxEntries }),
          ),
        );
      }
      inputs.text.value = form.text;
      const hint = t(`editor.map_entries_${this.#holds(form.def.mapType)}`);
      box.append(field(`${mid}-entries`, t('editor.map_entries', { map: form.name }), inputs.text, hint));
      this.#inputs.push(inputs);
    });
  }

  /** The bytes each socket's server-issued IDs open with (the first socket map's keys, most significant byte first), or null. */
  cidKeys(): number[][] | null {
    if (!this.active) return null;
    return socketKeys(
      this.#inputs.map((x) => ({ ...x.form, text: x.text.value })),
      (mt) => this.#holds(mt),
    );
  }

  /** The program to attach as the form says it, its maps checked by the model; or the sentence saying what is wrong, and the field. */
  choice(): EbpfChoice {
    const lang = this.#lang;
    const t = (k: UiKey, f: Record<string, string | number> = {}) => sayUi(lang, k, f);
    this.#mapsStatus.replaceChildren();
    for (const x of this.#inputs) x.text.removeAttribute('aria-invalid');
    this.#kind.removeAttribute('aria-invalid');
    this.#seed.removeAttribute('aria-invalid');
    const p = this.#program();
    if (!p) return { error: t('editor.elf_none'), field: this.#file };
    const kind = (KINDS as readonly string[]).includes(this.#kind.value) ? (this.#kind.value as ProgKind) : null;
    if (kind === null) {
      this.#kind.setAttribute('aria-invalid', 'true');
      return { error: t('editor.elf_kind_missing', { section: p.section }), field: this.#kind };
    }
    const seed = /^\d{1,15}$/.test(this.#seed.value.trim()) ? Number(this.#seed.value.trim()) : null;
    if (seed === null) {
      this.#seed.setAttribute('aria-invalid', 'true');
      return { error: t('editor.bad_number', { field: t('editor.elf_seed'), min: 0, max: 999999999999999 }), field: this.#seed };
    }
    // The definitions of the maps user space makes, as the reader set them.
    const forms: MapForm[] = [];
    for (const x of this.#inputs) {
      const def = { ...x.form.def };
      if (x.type && x.key && x.value && x.max) {
        for (const [input, label, set] of [
          [x.key, 'editor.map_key_size', (v: number) => (def.keySize = v)],
          [x.value, 'editor.map_value_size', (v: number) => (def.valueSize = v)],
          [x.max, 'editor.map_max', (v: number) => (def.maxEntries = v)],
        ] as const) {
          const v = Number(input.value);
          const lo = Number(input.min);
          const hi = Number(input.max);
          if (!Number.isInteger(v) || v < lo || v > hi || input.value.trim() === '') {
            input.setAttribute('aria-invalid', 'true');
            return this.#mapError(t('editor.map_bad_def', { map: x.form.name, field: t(label), min: lo, max: hi }), input);
          }
          input.removeAttribute('aria-invalid');
          set(v);
        }
        def.mapType = Number(x.type.value);
      }
      forms.push({ ...x.form, def, text: x.text.value });
    }
    const maps = formMaps(forms, (mt) => this.#holds(mt));
    if ('problem' in maps) {
      const x = this.#inputs.find((i) => i.form.name === maps.map)!;
      x.text.setAttribute('aria-invalid', 'true');
      return this.#mapError(this.#problem(maps.map, maps.problem), x.text);
    }
    const program: EbpfProgram = { ...p, kind };
    const refused = ebpfCheckMaps(program, maps, this.#sockets());
    if (refused) {
      const x = this.#inputs.find((i) => i.form.name === refused.map);
      x?.text.setAttribute('aria-invalid', 'true');
      return this.#mapError(t('editor.maps_refused', { message: sayMapRefusal(this.#lang, refused) }), x?.text ?? this.#maps);
    }
    return { program: { kind: 'ebpf', program, maps: maps.maps, extraMaps: maps.extraMaps, seed } };
  }

  #mapError(msg: string, at: HTMLElement): EbpfChoice {
    this.#mapsStatus.replaceChildren(h('p', 'rl-error', msg));
    return { error: msg, field: at };
  }

  #problem(map: string, p: FillProblem): string {
    const lang = this.#lang;
    switch (p.kind) {
      case 'lines':
        return sayUi(lang, 'editor.map_too_many', { map, max: p.max });
      case 'fields':
        return sayUi(lang, 'editor.map_bad_fields', { map, line: p.line });
      case 'key':
        return sayUi(lang, 'editor.map_bad_key', { map, line: p.line, text: p.text });
      default:
        return sayUi(lang, 'editor.map_bad_value', { map, line: p.line, text: p.text });
    }
  }
}
