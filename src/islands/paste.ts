/**
 * The paste analyser: connections copied from a real server (ss, netstat,
 * conntrack, tcpdump, /proc/net/tcp, CSV, the agent's traces), read by the
 * model's parsers in a worker, answered first with what holds for every
 * secret and then, under a named secret only, connection by connection.
 *
 * `mountPaste(el, options)` returns `dispose`; `<reuseport-paste>` is the
 * same widget as a custom element (attributes: kernel, proto, listeners,
 * text, from-url).
 */
import { pageLang } from './site';
import { el, field } from './dom';
import { buildPasteForm, readLayout, spreadSection, type PasteOptions, type SecretMode } from './paste-form';
import { groupSpec, loadModel, maxGroupMembers, parseBind, resolveNotes, resolveProfile, type Proto } from '../model/index';
import { say, sayBasis, sayRefusal } from '../model/messages';
import { PasteSession, readUrlState, writeUrlState, MAX_URL_TEXT, MAX_FILE_BYTES, type UrlState } from '../model/paste';
import type { Answered, BadLine, NotedLine, ReadSummary, Row } from '../model/paste-protocol';
import { recoverKey, type Recovered } from '../model/recover';
import { explainView } from '../scene/explain-view';
import { renderExplain } from '../render/explain-card';
import { renderVirtualTable, type VirtualTable } from '../render/virtual-table';
import { renderPasteBars } from '../render/paste-bars';
import { tableElement } from '../render/table';
import { hex32, parseHex32 } from '../hex';
import { defineIsland, emit as emitEvent, hostOf, islandElement, type WidgetEventKind } from './element';
import { pasteText, type PasteText } from './paste-text';
import type { Columns, Role, SpreadAnswer } from '../model/paste';
import type { CallLog, Layout } from '../model/lookup';
import type { LayoutAnswered } from '../model/paste-protocol';
import { lookupView } from '../scene/dispatch/lookup';
import { renderLookup } from '../render/dispatch/lookup';

/** A column role as one select value (`endpoint:client`), and back. */
function roleKey(r: Role): string {
  return 'side' in r ? `${r.kind}:${r.side}` : r.kind;
}
function roleOf(key: string): Role {
  const [kind, side] = key.split(':') as [string, string | undefined];
  return (side ? { kind, side } : { kind }) as Role;
}

let uid = 0;

/** A paste longer than this goes to a file: the text box would freeze the page. */
const MAX_BOX_CHARS = 200_000;

export async function mountPaste(host: HTMLElement, options: PasteOptions = {}): Promise<() => void> {
  await loadModel();
  const lang = pageLang(host);
  const t = pasteText(lang);
  const id = `rl-paste-${++uid}`;
  const f = (n: string) => `${id}-${n}`;
  const root = el('div', { class: 'rl-paste' });
  host.append(root);

  // ---- the form (paste-form.ts) -------------------------------------------
  const ui = buildPasteForm(root, t, f, options);
  const { form, text, file, fileNote, format, bind, kernel, profileNote, proto, listeners, closed, observedCounts, radios, secret, inner } = ui;
  const { layoutText, go, cancel, status, progress, errors, out } = ui;

  // ---- state ------------------------------------------------------------
  const session = new PasteSession();
  let source: { text: string } | { file: File } | undefined;
  let flip = false;
  /** CSV columns the reader chose (null: detect them). */
  let columns: Columns | null = null;
  let summary: ReadSummary | undefined;
  let answered: Answered | undefined;
  /** The layout in force for the last read (null: one group), and its answers. */
  let layout: CallLog | Layout | null = null;
  let layoutAnswered: LayoutAnswered | undefined;
  let spread: SpreadAnswer | undefined;
  let recovered: Recovered | undefined;
  let running: AbortController | undefined;
  let table: VirtualTable | undefined;
  let badTable: VirtualTable | undefined;
  let notesTable: VirtualTable | undefined;
  let filter: { listener: number | null; query: string } = { listener: null, query: '' };

  const setStatus = (s: string) => {
    status.textContent = s;
  };
  // Refused URL parameters stay named beside later problems until the reader submits the form.
  let urlProblems: string[] = [];
  const fail = (given: string[]) => {
    errors.replaceChildren();
    const messages = [...urlProblems, ...given];
    if (!messages.length) return;
    const ul = el('ul');
    ul.setAttribute('role', 'alert');
    for (const m of messages) ul.append(el('li', {}, m));
    errors.append(ul);
  };
  const busy = (on: boolean) => {
    hostOf(host).dataset.state = on ? 'busy' : 'ready';
    cancel.hidden = !on;
    go.disabled = on;
    progress.hidden = !on;
    if (!on) progress.value = 0;
  };
  const onProgress = (p: { phase: string; done: number; total: number }) => {
    progress.max = Math.max(1, p.total);
    progress.value = p.done;
    setStatus(t.working(p.phase, p.done, p.total));
  };

  const mode = (): SecretMode => [...radios].find(([, r]) => r.checked)?.[0] ?? 'none';

  const showProfile = () => {
    const k = kernel.value.trim();
    try {
      const p = resolveProfile(k);
      const notes = resolveNotes(k).map((n) => `${say(lang, 'note', n)}${lang === 'zh-CN' ? '。' : '.'}`);
      profileNote.textContent = [t.profile(`${p.release.major}.${p.release.minor}`, sayBasis(lang, p.basis)), ...notes].join(' ');
    } catch (e) {
      profileNote.textContent = (e as Error).message;
    }
  };

  /** Checks the group and secret fields; every problem names its field. */
  const readGroup = (): { problems: string[]; request?: Parameters<PasteSession['answer']>[0] } => {
    const problems: string[] = [];
    const n = Number(listeners.value);
    if (!Number.isInteger(n) || n < 1 || n > maxGroupMembers()) problems.push(t.listenersBad(maxGroupMembers()));
    const closedList = closed.value.trim() === '' ? [] : closed.value.split(',').map((x) => x.trim());
    if (!closedList.every((x) => /^\d{1,5}$/.test(x) && Number(x) < n)) problems.push(t.closedBad(n));
    if (observedCounts.value.trim() !== '') {
      const c = typedCounts();
      if (!c || c.length !== n) problems.push(t.countsBad(n));
    }
    try {
      resolveProfile(kernel.value.trim());
    } catch (e) {
      problems.push(t.kernelBad((e as Error).message));
    }
    let keys: { v4: number; v6Outer: number; v6Inner: number } | null = null;
    if (mode() !== 'none') {
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
  };

  // ---- rendering ----------------------------------------------------------
  /** A line's problem in this language: the model's reason, with its field and format in our words. */
  const sayReason = (b: BadLine): string => {
    const r = b.reason as Record<string, unknown>;
    const given: Record<string, string> = {};
    if (typeof r.field === 'string') given.field = t.fieldWords[r.field] ?? r.field;
    if (typeof r.format === 'string') given.format = t.formatWords[r.format] ?? r.format;
    return b.group === 'undecided' ? say(lang, 'undecided', b.reason as never, given) : say(lang, 'line_error', b.reason as never, given);
  };

  const renderRead = (s: ReadSummary) => {
    const sec = el('section', { class: 'rl-paste-read' });
    sec.append(el('h2', {}, t.readTitle));
    const dl = el('dl', { class: 'rl-facts' });
    const fact = (k: string, v: string | Node) => dl.append(el('dt', {}, k), el('dd', {}, v));
    fact(t.formatFound, s.detected ? t.formatName(s.detected.format, s.detected.header) : t.formatNone);
    if (s.detected?.evidence && s.detected.evidence.sample > 0) sec.append(el('p', { class: 'rl-hint rl-paste-why' }, t.formatWhy(s.detected)));
    fact(
      t.linesRead,
      t.lineCounts(s, (kind) => say(lang, 'skip', { kind } as never)),
    );
    const flipBtn = el('button', { type: 'button' }, t.flip);
    flipBtn.addEventListener('click', () => {
      flip = !flip;
      void analyse();
    });
    const side = el('span', {}, t.decision(s.decision, flip), ' ');
    side.append(flipBtn);
    if (Object.keys(s.sides ?? {}).length) side.append(el('span', { class: 'rl-hint' }, ' ', t.sidesBy(s.sides)));
    fact(t.serverSide, side);
    if (s.listening) fact(t.listeningFound, s.listeningAddrs.join(', '));
    sec.append(dl);
    const cols = s.detected?.format === 'csv' ? (s.detected.columns as Columns | null) : null;
    if (cols) sec.append(renderColumns(cols));
    if (s.partial) sec.append(el('p', { class: 'rl-warn' }, t.partial));
    if (s.cut) sec.append(el('p', { class: 'rl-warn' }, t.cut(s.cut)));
    if (s.bad + s.undecided > 0) {
      const det = el('details', { class: 'rl-paste-bad', open: s.rows === 0 });
      det.append(el('summary', {}, t.badTitle(s.bad + s.undecided)));
      const holder = el('div');
      det.append(holder);
      sec.append(det);
      badTable?.dispose();
      badTable = renderVirtualTable(holder, {
        caption: t.badTitle(s.bad + s.undecided),
        columns: t.badColumns,
        // The line's own text next to its number: after the reason, a long sentence, it sat scrolled out of view.
        rows: async (start, count) =>
          (await session.bad(start, count)).map((b: BadLine) => [
            String(b.line),
            b.text,
            sayReason(b),
            // The format in the page's words ("地址对格式"), never its id ("pairs").
            b.format ? (t.formatWords[b.format] ?? b.format) : '–',
          ]),
        rowHeight: 30,
        // The reason is a sentence: it wraps, so the format column beside it stays in view.
        wrap: true,
      });
      badTable.setCount(s.bad + s.undecided);
    }
    if (s.notes > 0) {
      const det = el('details', { class: 'rl-paste-notes', open: true });
      det.append(el('summary', {}, t.notesTitle(s.notes)));
      const holder = el('div');
      det.append(holder);
      sec.append(det);
      notesTable?.dispose();
      notesTable = renderVirtualTable(holder, {
        caption: t.notesTitle(s.notes),
        columns: t.notesColumns,
        rows: async (start, count) => (await session.notes(start, count)).map((x: NotedLine) => [String(x.line), say(lang, 'line_note', x.note)]),
        rowHeight: 30,
      });
      notesTable.setCount(s.notes);
    }
    return sec;
  };

  /** The CSV columns as read, each with a choice of what it holds; a change reads the input again. */
  const renderColumns = (cols: Columns) => {
    const box = el('details', { class: 'rl-paste-cols', open: true });
    box.append(el('summary', {}, t.columnsTitle(cols.header)));
    const rows = cols.columns.map((c, i) => {
      const sel = el('select');
      sel.setAttribute('aria-label', t.columnRole(c.name));
      for (const [key, label] of t.roles) sel.append(el('option', { value: key }, label));
      sel.value = roleKey(c.role);
      sel.addEventListener('change', () => {
        const next: Columns = { ...cols, columns: cols.columns.map((x, j) => (j === i ? { ...x, role: roleOf(sel.value) } : x)) };
        columns = next;
        void analyse();
      });
      return [c.name, sel];
    });
    box.append(tableElement({ head: t.columnsHead, rows }));
    return box;
  };

  const renderSpread = () => spreadSection(t, lang, spread, !!(summary && summary.rows > 0 && running));

  const renderBarsSection = () => {
    const a = answered;
    const bySocket = layoutAnswered?.counts ?? null;
    const counts = bySocket ?? a?.counts ?? a?.observed ?? typedCounts();
    const sec = el('section', { class: 'rl-paste-bars' });
    sec.append(el('h2', {}, bySocket ? t.barsTitleSockets : t.barsTitle));
    const mismatch = layoutAnswered?.mismatch ?? a?.mismatch;
    if (mismatch) {
      const k = layoutAnswered?.mismatched ?? a?.mismatched ?? 0;
      const why = sayReason({ line: 0, format: summary?.detected?.format ?? null, group: 'line_error', reason: mismatch, text: '' });
      sec.append(el('p', { class: 'rl-warn' }, t.mismatched(k, why)));
    }
    if (!counts) {
      sec.append(el('p', {}, t.barsNeedSecret(spread ? t.spreadTitle : null)));
      return sec;
    }
    const which = bySocket ? t.barsSockets(secretLabel()) : a?.counts ? t.barsUnder(secretLabel()) : a?.observed ? t.barsObserved : t.barsTyped;
    sec.append(el('p', {}, which));
    const band = !bySocket && spread?.spread.exchangeable ? spread.spread.band : undefined;
    if (spread && !spread.spread.exchangeable) sec.append(el('p', { class: 'rl-hint' }, t.notExchangeable));
    renderPasteBars(sec, { counts, band, label: t.barsLabel(counts, band), axis: bySocket ? t.socketAxis : t.listenerAxis });
    const det = el('details');
    det.append(el('summary', {}, t.countsTable));
    const rows = counts.map((c, i) => {
      const b = band ?? spread?.spread.perListener.find((x) => x.listener === i);
      const inBand = b ? `${c < b.p5 ? t.below : c > b.p95 ? t.above : t.within} (${b.p5.toLocaleString()}–${b.p95.toLocaleString()})` : '–';
      return [String(i), c.toLocaleString(), inBand];
    });
    det.append(tableElement({ head: t.countsHead, rows }));
    sec.append(det);
    return sec;
  };

  const secretLabel = () => {
    const m = mode();
    const v = secret.value.trim();
    return m === 'random' ? t.randomBootLabel(v) : m === 'recovered' ? t.recoveredLabel(v) : t.typedLabel(v);
  };

  const typedCounts = (): number[] | null => {
    const v = observedCounts.value.trim();
    if (!v) return null;
    const parts = v.split(/[\s,;]+/).filter(Boolean);
    return parts.every((p) => /^\d{1,12}$/.test(p)) ? parts.map(Number) : null;
  };

  const explainBox = el('div', { class: 'rl-paste-explain' });
  explainBox.setAttribute('aria-live', 'polite');

  const renderRows = () => {
    const sec = el('section', { class: 'rl-paste-rows' });
    sec.append(el('h2', {}, t.rowsTitle));
    if (!summary || summary.rows === 0) {
      sec.append(el('p', {}, t.noRows));
      return sec;
    }
    if (!answered?.counts) sec.append(el('p', { class: 'rl-hint' }, t.rowsNeedSecret));
    const bar = el('div', { class: 'rl-paste-filter' });
    const q = el('input', { type: 'search', value: filter.query, placeholder: t.searchPlaceholder });
    const lf = el('input', { type: 'number', min: '0', value: filter.listener === null ? '' : String(filter.listener) });
    bar.append(field(f('q'), t.search, q), field(f('lf'), t.filterListener, lf, t.filterListenerHint));
    sec.append(bar);
    const count = el('p', { class: 'rl-hint' });
    count.setAttribute('aria-live', 'polite');
    sec.append(count);
    const holder = el('div');
    sec.append(holder, explainBox);
    table?.dispose();
    table = renderVirtualTable(holder, {
      caption: t.rowsTitle,
      columns: layoutAnswered ? t.rowColumnsSockets : t.rowColumns,
      rows: async (start, n) =>
        (await session.rows(start, n)).map((r: Row) => [
          String(r.line),
          r.client,
          r.server,
          r.listener === null ? (answered?.counts ? t.none : '–') : String(r.listener),
          r.observed === null ? '–' : String(r.observed),
        ]),
      action: { text: t.explain, label: (_i, c) => t.explainRow(c[0]!), run: (i) => void explainRow(i) },
    });
    const apply = async () => {
      const listener = lf.value.trim() === '' ? null : Number(lf.value);
      filter = { listener: listener !== null && Number.isInteger(listener) && listener >= 0 ? listener : null, query: q.value.trim().slice(0, 200) };
      const n = await session.filter(filter);
      count.textContent = t.shown(n, summary!.rows);
      table!.setCount(n);
    };
    let debounce = 0;
    const later = () => {
      clearTimeout(debounce);
      debounce = window.setTimeout(() => void apply(), 150);
    };
    q.addEventListener('input', later);
    lf.addEventListener('input', later);
    void apply();
    return sec;
  };

  const explainRow = async (i: number) => {
    explainBox.replaceChildren();
    const g = readGroup();
    const req = g.problems.length ? undefined : g.request;
    if (!req?.keys) {
      explainBox.append(el('p', {}, t.explainNeedsSecret));
      return;
    }
    try {
      if (layout && layoutAnswered) {
        const r = await session.explainLayout(i);
        const h = el('h3', { tabIndex: -1 }, t.explainTitle(r.line, secretLabel()));
        explainBox.append(h);
        const card = el('div');
        explainBox.append(card);
        // A pasted layout's sockets are not listeners of a visualized group.
        const plan = { listenerOf: layoutAnswered.results.map(() => null) };
        renderLookup(card, t.layoutDescribe(layoutAnswered.sockets), lookupView(plan, layoutAnswered.results, r.explain, lang), 4, lang);
        h.focus();
        return;
      }
      const r = await session.explain(i, req);
      const h = el('h3', { tabIndex: -1 }, t.explainTitle(r.line, secretLabel()));
      explainBox.append(h);
      const card = el('div');
      explainBox.append(card);
      renderExplain(card, explainView(r.explain, lang), 4, t.card);
      h.focus();
    } catch (e) {
      explainBox.append(el('p', { class: 'rl-warn' }, (e as Error).message));
    }
  };

  const renderRecover = () => {
    const sec = el('section', { class: 'rl-paste-recover' });
    sec.append(el('h2', {}, t.recoverTitle));
    const n = summary?.observed ?? 0;
    sec.append(el('p', {}, n ? t.recoverLead(n) : t.recoverNeeds));
    if (!n) return sec;
    const btn = el('button', { type: 'button' }, t.recoverGo);
    const stop = el('button', { type: 'button', hidden: true }, t.cancel);
    const prog = el('progress', { max: 1, value: 0, hidden: true });
    prog.setAttribute('aria-label', t.recoverTitle);
    const note = el('p');
    note.setAttribute('aria-live', 'polite');
    const result = el('div');
    sec.append(el('div', { class: 'rl-actions' }, btn, stop), prog, note, result);
    if (recovered) showRecovered(result, recovered);
    btn.addEventListener('click', async () => {
      const req = readGroup();
      if (req.problems.length || !req.request) {
        fail(req.problems);
        return;
      }
      const ac = new AbortController();
      btn.disabled = true;
      stop.hidden = false;
      prog.hidden = false;
      stop.onclick = () => ac.abort();
      try {
        const obs = await session.observations();
        const r = await recoverKey(req.request.kernel, req.request.group, obs, {
          signal: ac.signal,
          onProgress: (p) => {
            prog.max = p.total;
            prog.value = p.searched;
            note.textContent = t.recoverProgress(p.searched / p.total, p.eta);
          },
        });
        recovered = r;
        note.textContent = '';
        showRecovered(result, r);
      } catch (e) {
        note.textContent = t.recoverFailed((e as Error).message);
      } finally {
        btn.disabled = false;
        stop.hidden = true;
        prog.hidden = true;
      }
    });
    return sec;
  };

  const showRecovered = (box: HTMLElement, r: Recovered) => {
    box.replaceChildren();
    box.append(el('p', {}, t.recovered(r)));
    if (r.values.length) {
      const ul = el('ul', { class: 'rl-candidates' });
      for (const v of r.values.slice(0, 16)) ul.append(el('li', {}, hex32(v)));
      box.append(ul);
    }
    if (r.candidates >= 1 && r.complete) {
      const use = el('button', { type: 'button' }, t.useRecovered(hex32(r.values[0]!)));
      use.addEventListener('click', () => {
        secret.value = hex32(r.values[0]!);
        radios.get('recovered')!.disabled = false;
        radios.get('recovered')!.checked = true;
        void answer();
      });
      box.append(use);
    }
  };

  const renderExport = () => {
    const sec = el('section', { class: 'rl-paste-export' });
    sec.append(el('h2', {}, t.exportTitle));
    const csv = el('button', { type: 'button' }, t.exportCsv);
    const json = el('button', { type: 'button' }, t.exportJson);
    const share = el('button', { type: 'button' }, t.share);
    const note = el('p', { class: 'rl-hint' });
    note.setAttribute('aria-live', 'polite');
    const download = async (kind: 'csv' | 'json') => {
      const blob = await session.export(kind, { secret: answered?.counts ? secretLabel() : null, spread: spread ?? null });
      const a = el('a', { href: URL.createObjectURL(blob), download: `reuseport-connections.${kind}` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    };
    csv.addEventListener('click', () => void download('csv'));
    json.addEventListener('click', () => void download('json'));
    share.addEventListener('click', async () => {
      const st = urlState();
      // Input too large for a link (or a file): the link carries the settings alone, as the message says.
      const whole = st.text === null ? undefined : writeUrlState(location.href, st);
      const url = whole ?? writeUrlState(location.href, { ...st, text: null })!;
      history.replaceState(null, '', url);
      let said: string;
      try {
        await navigator.clipboard.writeText(url);
        said = t.copied;
      } catch {
        said = t.linkInAddressBar;
      }
      note.textContent = whole ? said : `${t.tooBigForUrl(MAX_URL_TEXT)} ${said}`;
    });
    sec.append(el('div', { class: 'rl-actions' }, csv, json, share), note);
    return sec;
  };

  const urlState = (): UrlState => ({
    kernel: kernel.value.trim(),
    proto: proto.value,
    listeners: listeners.value,
    closed: closed.value.trim(),
    bind: bind.value.trim(),
    format: format.value,
    flip,
    secret: mode() === 'none' ? '' : secret.value.trim(),
    inner: inner.value.trim(),
    mode: mode(),
    counts: observedCounts.value.trim(),
    text: source && 'text' in source ? source.text : file.files?.length ? null : text.value,
  });

  /** The layout's sockets: each one's bind and listen answers, and what it receives. */
  const renderLayout = () => {
    const a = layoutAnswered!;
    const sec = el('section', { class: 'rl-paste-sockets' });
    sec.append(el('h2', {}, t.socketsTitle));
    sec.append(el('p', {}, t.socketsLead(a.sockets, a.unrouted, summary!.rows)));
    const rows = a.results.slice(0, 4096).map((r) => {
      const where = r.family === 'inet6' ? `[${r.addr}]:${r.port}` : `${r.addr}:${r.port}`;
      const call = (x: typeof r.bind) => (x ? `${x.errno}: ${sayRefusal(lang, x)}` : t.callOk);
      return [
        String(r.socket),
        where,
        call(r.bind),
        r.proto === 'tcp' ? call(r.listen) : '–',
        r.group === null ? '–' : t.groupMember(r.group, r.member ?? 0),
        a.counts ? (a.counts[r.socket] ?? 0).toLocaleString() : '–',
      ];
    });
    sec.append(tableElement({ caption: t.socketsCaption, head: t.socketsHead, rows }));
    return sec;
  };

  const renderAll = () => {
    if (!summary) return;
    out.replaceChildren(
      renderRead(summary),
      ...(layoutAnswered ? [renderLayout()] : []),
      renderSpread(),
      renderBarsSection(),
      renderRows(),
      renderRecover(),
      renderExport(),
    );
  };

  // ---- the work -----------------------------------------------------------
  const answer = async () => {
    const g = readGroup();
    fail(g.problems);
    if (!g.request) return;
    // With a problem in the secret, only what holds for every secret is shown.
    if (g.problems.length) g.request.keys = null;
    answered = await session.answer(g.request);
    if (layout) layoutAnswered = await session.answerLayout({ kernel: g.request.kernel, layout, keys: g.request.keys, proto: proto.value as Proto, cpu: 0 });
    renderAll();
    setStatus(t.answeredStatus(summary!, answered, g.request.keys ? secretLabel() : null));
  };

  const analyse = async () => {
    if (running) return;
    fail([]);
    const problems: string[] = [];
    const bindText = bind.value.trim();
    if (bindText && !/^:\d{1,5}$/.test(bindText)) {
      try {
        parseBind(bindText);
      } catch (e) {
        problems.push(t.bindBad((e as Error).message));
      }
    }
    const chosen = file.files?.[0];
    if (chosen && chosen.size > MAX_FILE_BYTES) problems.push(t.fileTooBig(chosen.size, MAX_FILE_BYTES));
    source = chosen && !problems.length ? { file: chosen } : { text: text.value };
    if ('text' in source && source.text.trim() === '') problems.push(t.nothing);
    const g0 = readGroup();
    problems.push(...g0.problems);
    layout = null;
    if (layoutText.value.trim() !== '') {
      const r = readLayout(layoutText.value);
      if (r.error) problems.push(t.layoutBad(r.error));
      else layout = r.layout!;
    }
    if (problems.length) {
      fail(problems);
      setStatus(t.notRun);
      return;
    }
    running = new AbortController();
    busy(true);
    explainBox.replaceChildren();
    const t0 = performance.now();
    const emit = (name: WidgetEventKind, detail: object) => emitEvent(host, name, { ms: performance.now() - t0, ...detail });
    emit('started', {});
    try {
      summary = await session.read(source, { format: format.value === 'auto' ? null : format.value, columns, bind: bindText || null, flip }, onProgress);
      answered = undefined;
      layoutAnswered = undefined;
      spread = undefined;
      recovered = undefined;
      if (summary.trace) {
        // A trace says its own group: the form takes it, so the answers are for what was recorded.
        kernel.value = summary.trace.kernel;
        proto.value = summary.trace.proto;
        listeners.value = String(summary.trace.listeners);
        closed.value = summary.trace.closed.join(',');
        showProfile();
      }
      if (summary.rows === 0) {
        renderAll();
        setStatus(t.readStatus(summary));
        emit('completed', { spread: null, verdict: null });
        return;
      }
      const g = readGroup();
      fail(g.problems);
      if (!g.request) {
        renderAll();
        return;
      }
      // A problem with the secret (an IPv6 key missing) leaves the secret-free answers standing.
      if (g.problems.length) g.request.keys = null;
      answered = await session.answer(g.request, onProgress);
      layoutAnswered = layout
        ? await session.answerLayout({ kernel: g.request.kernel, layout, keys: g.request.keys, proto: proto.value as Proto, cpu: 0 })
        : undefined;
      renderAll();
      emit('answered', { lines: summary.lines, rows: summary.rows, counts: answered.counts, observed: answered.observed });
      spread = await session.spread(g.request, null, answered.observed ?? typedCounts(), onProgress);
      renderAll();
      setStatus(t.answeredStatus(summary, answered, g.request.keys ? secretLabel() : null));
      emit('completed', { spread: spread.spread, verdict: spread.comparison?.verdict ?? null });
    } catch (e) {
      fail([(e as Error).message]);
      setStatus(t.notRun);
      running = undefined;
      // What was read and answered before the failure stays on the page.
      if (summary) renderAll();
    } finally {
      busy(false);
      running = undefined;
    }
  };

  // ---- events ---------------------------------------------------------------
  const onSubmit = (e: Event) => {
    e.preventDefault();
    urlProblems = [];
    void analyse();
  };
  const onCancel = () => session.stop();
  const onFile = () => {
    columns = null;
    const x = file.files?.[0];
    fileNote.textContent = x ? t.fileChosen(x.name, x.size) : '';
  };
  const onDrop = (e: DragEvent) => {
    const x = e.dataTransfer?.files?.[0];
    if (!x) return;
    e.preventDefault();
    const dt = new DataTransfer();
    dt.items.add(x);
    file.files = dt.files;
    onFile();
  };
  const onDragOver = (e: DragEvent) => {
    if (e.dataTransfer?.types.includes('Files')) e.preventDefault();
  };
  const onPaste = (e: ClipboardEvent) => {
    // A huge paste would freeze the text box: it becomes a file instead.
    const s = e.clipboardData?.getData('text/plain') ?? '';
    if (s.length <= MAX_BOX_CHARS) return;
    e.preventDefault();
    const dt = new DataTransfer();
    dt.items.add(new File([s], 'pasted.txt', { type: 'text/plain' }));
    file.files = dt.files;
    fileNote.textContent = t.pastedAsFile(s.length);
  };
  const onMode = () => {
    const m = mode();
    if (m === 'random') {
      secret.value = hex32(crypto.getRandomValues(new Uint32Array(1))[0]!);
      inner.value = hex32(crypto.getRandomValues(new Uint32Array(1))[0]!);
    }
    if (summary?.rows) void answer();
  };
  form.addEventListener('submit', onSubmit);
  cancel.addEventListener('click', onCancel);
  file.addEventListener('change', onFile);
  text.addEventListener('drop', onDrop);
  text.addEventListener('dragover', onDragOver);
  text.addEventListener('paste', onPaste);
  kernel.addEventListener('input', showProfile);
  for (const r of radios.values()) r.addEventListener('change', onMode);
  secret.addEventListener('change', () => {
    if (mode() === 'none' && secret.value.trim()) radios.get('typed')!.checked = true;
  });
  showProfile();

  if (options.fromUrl) {
    const st = readUrlState(location.href);
    urlProblems = st.errors.map((e) => t.urlBad(e.param, e.value));
    fail([]);
    const v = st.state;
    if (v.kernel) kernel.value = v.kernel;
    if (v.proto) proto.value = v.proto;
    if (v.listeners) listeners.value = v.listeners;
    if (v.closed) closed.value = v.closed;
    if (v.bind) bind.value = v.bind;
    if (v.format) format.value = v.format;
    if (v.flip) flip = true;
    if (v.secret) secret.value = v.secret;
    if (v.inner) inner.value = v.inner;
    if (v.mode && radios.has(v.mode as SecretMode)) {
      if (v.mode === 'recovered') radios.get('recovered')!.disabled = false;
      radios.get(v.mode as SecretMode)!.checked = true;
    }
    if (v.counts) observedCounts.value = v.counts;
    if (v.text) text.value = v.text;
    showProfile();
  }
  if (text.value.trim()) void analyse();
  else {
    setStatus(t.ready);
    hostOf(host).dataset.state = 'ready';
  }

  return () => {
    form.removeEventListener('submit', onSubmit);
    table?.dispose();
    badTable?.dispose();
    notesTable?.dispose();
    session.dispose();
    root.remove();
  };
}

/** `<reuseport-paste kernel="6.18" proto="tcp" listeners="8" text="..." from-url>`. */
export const ReusePortPasteElement = islandElement(
  mountPaste,
  (e): PasteOptions => ({
    kernel: e.getAttribute('kernel') ?? undefined,
    proto: (e.getAttribute('proto') as Proto | null) ?? undefined,
    listeners: e.hasAttribute('listeners') ? Number(e.getAttribute('listeners')) : undefined,
    text: e.getAttribute('text') ?? undefined,
    fromUrl: e.hasAttribute('from-url'),
  }),
  ['kernel', 'proto', 'listeners', 'text', 'lang'],
);

export function definePasteElement(): void {
  defineIsland('reuseport-paste', ReusePortPasteElement);
}

export type { PasteText };
