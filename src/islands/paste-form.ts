/**
 * The paste analyser's form: the text or file, how to read it, the group and
 * its secret, and the layout of several sockets; then the status line, the
 * progress bar, the error list and the results box. Built once by
 * `PasteWidget` (paste.ts), which wires it to the paste worker; what the
 * form says is read here (the group, the secret, the link's settings). The
 * results are drawn by render/paste-*.ts.
 */
import { groupSpec, maxGroupMembers, parseBind, profiles, resolveNotes, resolveProfile, type Proto } from '../model/index';
import { say, sayBasis, type Lang } from '../model/messages';
import type { CallLog, Layout } from '../model/lookup';
import { el, field } from './dom';
import type { PasteText } from '../render/paste-text';
import type { PasteSession, UrlState } from '../model/paste';
import type { ReadSummary } from '../model/paste-protocol';
import { parseHex32 } from '../hex';

/** Two groups on one port: a wildcard pair and a pair on 127.0.0.1, which wins the lookup for packets to it. */
const LAYOUT_EXAMPLE = JSON.stringify(
  {
    sockets: [
      { family: 'inet', proto: 'tcp', addr: '0.0.0.0', port: 8080, reuseport: true },
      { family: 'inet', proto: 'tcp', addr: '0.0.0.0', port: 8080, reuseport: true },
      { family: 'inet', proto: 'tcp', addr: '127.0.0.1', port: 8080, reuseport: true },
      { family: 'inet', proto: 'tcp', addr: '127.0.0.1', port: 8080, reuseport: true },
    ],
  },
  null,
  1,
);
/** The largest layout text read (a layout of thousands of sockets fits). */
const MAX_LAYOUT_CHARS = 512 * 1024;

/** The layout text as an object, or the problem with it. */
export function readLayout(text: string): { layout?: CallLog | Layout; error?: string } {
  if (text.length > MAX_LAYOUT_CHARS) return { error: `${text.length} characters; at most ${MAX_LAYOUT_CHARS}` };
  try {
    // A call log, or the earlier {sockets, ...} form; the model reads both and names any wrong field.
    const v = JSON.parse(text) as Partial<CallLog & Layout>;
    if (!v || typeof v !== 'object' || !(Array.isArray(v.calls) || Array.isArray(v.sockets)))
      return { error: '"calls" must be a list of calls ({"call": "socket", ...})' };
    return { layout: v as CallLog | Layout };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/** The widget's settings (`<reuseport-paste>`'s attributes). */
export interface PasteOptions {
  kernel?: string;
  proto?: Proto;
  listeners?: number;
  text?: string;
  /** Read the settings from the page URL (the lookup page does; embeds do not). */
  fromUrl?: boolean;
}

export type SecretMode = 'none' | 'typed' | 'random' | 'recovered';

/** Builds the form and the result areas under `root`; returns the elements the widget reads or changes. */
export function buildPasteForm(root: HTMLElement, t: PasteText, f: (n: string) => string, options: PasteOptions) {
  const form = el('form', { class: 'rl-form rl-paste-form', noValidate: true });
  const text = el('textarea', { rows: 8, spellcheck: false, placeholder: t.placeholder, value: options.text ?? '' });
  text.setAttribute('wrap', 'off');
  const file = el('input', { type: 'file' });
  file.setAttribute('accept', '.txt,.csv,.tsv,.json,.log,text/*,application/json');
  const fileNote = el('p', { class: 'rl-hint' });
  fileNote.setAttribute('aria-live', 'polite');
  const textField = field(f('text'), t.text, text, t.textHint);
  const fileLabel = el('label', { class: 'rl-file' }, t.file, file);
  textField.append(fileLabel, fileNote);

  const format = el('select');
  for (const [v, label] of t.formats) format.append(el('option', { value: v }, label));
  const bind = el('input', { placeholder: t.bindPlaceholder, spellcheck: false });
  const kernel = el('input', { value: options.kernel ?? '6.18', spellcheck: false });
  const kernelList = el('datalist', { id: f('profiles') });
  for (const p of profiles()) kernelList.append(el('option', { value: `${p.release.major}.${p.release.minor}` }));
  kernel.setAttribute('list', kernelList.id);
  const profileNote = el('p', { class: 'rl-hint' });
  profileNote.setAttribute('aria-live', 'polite');
  // What the kernel string resolved to stands under the kernel field.
  const kernelField = field(f('kernel'), t.kernel, kernel, t.kernelHint);
  kernelField.append(profileNote);
  const proto = el('select');
  for (const p of ['tcp', 'udp']) proto.append(el('option', { value: p }, p.toUpperCase()));
  proto.value = options.proto ?? 'tcp';
  const listeners = el('input', { type: 'number', min: '1', max: String(maxGroupMembers()), value: String(options.listeners ?? 8) });
  const closed = el('input', { inputMode: 'numeric', spellcheck: false });
  const observedCounts = el('input', { spellcheck: false, placeholder: '812, 790, 1630, …' });

  const secretBox = el('fieldset', { class: 'rl-secret' });
  secretBox.append(el('legend', {}, t.secret));
  const modes: [SecretMode, string][] = [
    ['none', t.secretNone],
    ['typed', t.secretTyped],
    ['random', t.secretRandom],
    ['recovered', t.secretRecovered],
  ];
  const radios = new Map<SecretMode, HTMLInputElement>();
  for (const [m, label] of modes) {
    const r = el('input', { type: 'radio', name: f('mode'), value: m, checked: m === 'none' });
    radios.set(m, r);
    secretBox.append(el('label', { class: 'rl-radio' }, r, ` ${label}`));
  }
  const secret = el('input', { spellcheck: false, placeholder: '0x1a2b3c4d' });
  const inner = el('input', { spellcheck: false, placeholder: '0x00000000' });
  secretBox.append(field(f('secret'), t.secretV4, secret, t.secretV4Hint), field(f('inner'), t.secretV6, inner, t.secretV6Hint));
  radios.get('recovered')!.disabled = true;

  // Several sockets: a layout as `reuseport-agent predict --layout` reads it.
  const layoutBox = el('details', { class: 'rl-paste-layout' });
  layoutBox.append(el('summary', {}, t.layoutTitle));
  const layoutText = el('textarea', { rows: 6, spellcheck: false, placeholder: LAYOUT_EXAMPLE });
  layoutBox.append(field(f('layout'), t.layout, layoutText, t.layoutHint));
  const layoutExample = el('button', { type: 'button' }, t.layoutExample);
  layoutExample.addEventListener('click', () => {
    layoutText.value = LAYOUT_EXAMPLE;
  });
  layoutBox.append(layoutExample);

  form.append(
    textField,
    field(f('format'), t.format, format),
    field(f('bind'), t.bind, bind, t.bindHint),
    kernelField,
    kernelList,
    field(f('proto'), t.proto, proto),
    field(f('listeners'), t.listeners, listeners, t.listenersHint(maxGroupMembers())),
    field(f('closed'), t.closed, closed, t.closedHint),
    field(f('observed'), t.observedCounts, observedCounts, t.observedCountsHint),
    secretBox,
    layoutBox,
  );
  const actions = el('div', { class: 'rl-actions' });
  const go = el('button', { type: 'submit', class: 'rl-primary' }, t.analyse);
  const cancel = el('button', { type: 'button', hidden: true }, t.cancel);
  actions.append(go, cancel);
  form.append(actions);
  root.append(form);

  const status = el('p', { class: 'rl-status' });
  status.setAttribute('role', 'status');
  status.setAttribute('aria-live', 'polite');
  const progress = el('progress', { max: 1, value: 0, hidden: true });
  progress.setAttribute('aria-label', t.progress);
  const errors = el('div', { class: 'rl-errors' });
  const out = el('div', { class: 'rl-results' });
  root.append(status, progress, errors, out);

  return {
    form,
    text,
    file,
    fileNote,
    format,
    bind,
    kernel,
    profileNote,
    proto,
    listeners,
    closed,
    observedCounts,
    radios,
    secret,
    inner,
    layoutText,
    go,
    cancel,
    status,
    progress,
    errors,
    out,
  };
}

/** A paste longer than this goes to a file: the text box would freeze the page. */
const MAX_BOX_CHARS = 200_000;

/** What the widget does when the form asks. */
export interface FormHandlers {
  /** The form was submitted. */
  submit: () => void;
  /** Cancel was pressed. */
  cancel: () => void;
  /** A file was chosen, dropped, or a huge paste became one. */
  file: () => void;
  /** The kernel field changed. */
  kernel: () => void;
  /** Another secret mode was chosen. */
  mode: () => void;
}

/**
 * Wires the form until `signal` aborts: a file dropped on the text box is chosen, a paste too long for the box becomes
 * a file, a secret typed while "none" is chosen chooses "typed"; the rest goes to `on`.
 */
export function wireForm(ui: PasteUi, t: PasteText, signal: AbortSignal, on: FormHandlers): void {
  const opts = { signal };
  const { form, cancel, file, fileNote, text, kernel, radios, secret } = ui;
  form.addEventListener(
    'submit',
    (e) => {
      e.preventDefault();
      on.submit();
    },
    opts,
  );
  cancel.addEventListener('click', () => on.cancel(), opts);
  file.addEventListener('change', () => on.file(), opts);
  text.addEventListener(
    'drop',
    (e) => {
      const x = e.dataTransfer?.files?.[0];
      if (!x) return;
      e.preventDefault();
      const dt = new DataTransfer();
      dt.items.add(x);
      file.files = dt.files;
      on.file();
    },
    opts,
  );
  text.addEventListener(
    'dragover',
    (e) => {
      if (e.dataTransfer?.types.includes('Files')) e.preventDefault();
    },
    opts,
  );
  text.addEventListener(
    'paste',
    (e) => {
      // A huge paste would freeze the text box: it becomes a file instead.
      const s = e.clipboardData?.getData('text/plain') ?? '';
      if (s.length <= MAX_BOX_CHARS) return;
      e.preventDefault();
      const dt = new DataTransfer();
      dt.items.add(new File([s], 'pasted.txt', { type: 'text/plain' }));
      file.files = dt.files;
      fileNote.textContent = t.pastedAsFile(s.length);
    },
    opts,
  );
  kernel.addEventListener('input', () => on.kernel(), opts);
  for (const r of radios.values()) r.addEventListener('change', () => on.mode(), opts);
  secret.addEventListener(
    'change',
    () => {
      if (secretMode(ui) === 'none' && secret.value.trim()) radios.get('typed')!.checked = true;
    },
    opts,
  );
}

/** Says under the kernel field which profile it resolves to, where its rules were read, and its notes (or the problem). */
export function showProfile(ui: PasteUi, t: PasteText, lang: Lang): void {
  const { kernel, profileNote } = ui;
  const k = kernel.value.trim();
  try {
    const p = resolveProfile(k);
    const notes = resolveNotes(k).map((n) => `${say(lang, 'note', n)}${lang === 'zh-CN' ? '。' : '.'}`);
    profileNote.textContent = [t.profile(`${p.release.major}.${p.release.minor}`, sayBasis(lang, p.basis)), ...notes].join(' ');
  } catch (e) {
    profileNote.textContent = (e as Error).message;
  }
}

/** The form's elements, as {@link buildPasteForm} returns them. */
export type PasteUi = ReturnType<typeof buildPasteForm>;

/** The group and keys the worker answers under. */
export type GroupRequest = Parameters<PasteSession['answer']>[0];

/** The secret the reader chose. */
export function secretMode(ui: PasteUi): SecretMode {
  return [...ui.radios].find(([, r]) => r.checked)?.[0] ?? 'none';
}

/** The per-listener counts the reader typed, or null when none (or not whole numbers). */
export function typedCounts(ui: PasteUi): number[] | null {
  const v = ui.observedCounts.value.trim();
  if (!v) return null;
  const parts = v.split(/[\s,;]+/).filter(Boolean);
  return parts.every((p) => /^\d{1,12}$/.test(p)) ? parts.map(Number) : null;
}

/**
 * The group and secret the fields say, for the connections `summary` read; every problem names its field. No
 * request before a read: the group's address and port default to the first connection's server side.
 */
export function readGroup(ui: PasteUi, t: PasteText, summary: ReadSummary | undefined): { problems: string[]; request?: GroupRequest } {
  const { listeners, closed, observedCounts, kernel, secret, inner, bind, proto } = ui;
  const problems: string[] = [];
  const n = Number(listeners.value);
  if (!Number.isInteger(n) || n < 1 || n > maxGroupMembers()) problems.push(t.listenersBad(maxGroupMembers()));
  const closedList = closed.value.trim() === '' ? [] : closed.value.split(',').map((x) => x.trim());
  if (!closedList.every((x) => /^\d{1,5}$/.test(x) && Number(x) < n)) problems.push(t.closedBad(n));
  if (observedCounts.value.trim() !== '') {
    const c = typedCounts(ui);
    if (!c || c.length !== n) problems.push(t.countsBad(n));
  }
  try {
    resolveProfile(kernel.value.trim());
  } catch (e) {
    problems.push(t.kernelBad((e as Error).message));
  }
  let keys: { v4: number; v6Outer: number; v6Inner: number } | null = null;
  if (secretMode(ui) !== 'none') {
    const v4 = parseHex32(secret.value);
    if (v4 === undefined) problems.push(t.secretBad);
    const v6 = inner.value.trim() === '' ? 0 : parseHex32(inner.value);
    if (v6 === undefined) problems.push(t.innerBad);
    // IPv6 answers need the inner key too: never assumed to be 0.
    else if (inner.value.trim() === '' && (summary?.v6 ?? 0) > 0) problems.push(t.innerMissing(summary!.v6));
    if (v4 !== undefined && v6 !== undefined) keys = { v4, v6Outer: v4, v6Inner: v6 };
  }
  const server = summary?.server;
  if (!server) return { problems };
  // The group's address and port: the listening side given, else the first connection's server side.
  let addr = server.addr;
  let port = server.port;
  const bindText = bind.value.trim();
  if (bindText) {
    try {
      const b = bindText.startsWith(':') ? { addr: server.addr, port: Number(bindText.slice(1)) } : parseBind(bindText);
      addr = b.addr;
      port = b.port ?? port;
    } catch (e) {
      problems.push(t.bindBad((e as Error).message));
    }
  }
  return {
    problems,
    request: {
      kernel: kernel.value.trim(),
      group: groupSpec({ proto: proto.value as Proto, listeners: n, bind: addr, port, closed: closedList.map(Number) }),
      keys,
      cpu: 0,
    },
  };
}

/** The form's settings for a link; the text is null when it came from a file (a link cannot carry it). */
export function formUrlState(ui: PasteUi, flip: boolean, source: { text: string } | { file: File } | undefined): UrlState {
  const mode = secretMode(ui);
  return {
    kernel: ui.kernel.value.trim(),
    proto: ui.proto.value,
    listeners: ui.listeners.value,
    closed: ui.closed.value.trim(),
    bind: ui.bind.value.trim(),
    format: ui.format.value,
    flip,
    secret: mode === 'none' ? '' : ui.secret.value.trim(),
    inner: ui.inner.value.trim(),
    mode,
    counts: ui.observedCounts.value.trim(),
    text: source && 'text' in source ? source.text : ui.file.files?.length ? null : ui.text.value,
  };
}

/** Fills the form with a link's settings (those it has); returns whether the link flips the sides. */
export function fillForm(ui: PasteUi, v: UrlState): boolean {
  const { kernel, proto, listeners, closed, bind, format, secret, inner, radios, observedCounts, text } = ui;
  if (v.kernel) kernel.value = v.kernel;
  if (v.proto) proto.value = v.proto;
  if (v.listeners) listeners.value = v.listeners;
  if (v.closed) closed.value = v.closed;
  if (v.bind) bind.value = v.bind;
  if (v.format) format.value = v.format;
  if (v.secret) secret.value = v.secret;
  if (v.inner) inner.value = v.inner;
  if (v.mode && radios.has(v.mode as SecretMode)) {
    if (v.mode === 'recovered') radios.get('recovered')!.disabled = false;
    radios.get(v.mode as SecretMode)!.checked = true;
  }
  if (v.counts) observedCounts.value = v.counts;
  if (v.text) text.value = v.text;
  return !!v.flip;
}
