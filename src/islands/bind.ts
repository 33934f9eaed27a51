/**
 * The bind checker `<reuseport-bind kernel="6.18" layout='{"calls":[…]}'>`:
 * a call log (the agent's `predict --layout` format: the calls a program
 * makes on its sockets, in order), each call editable, movable and
 * removable; beside each call, the model's answer to it (`Host.answers()`):
 * ok, or the errno, the kernel rule and the socket it conflicts with. A
 * layout in the earlier `{sockets, …}` form is shown as the calls the model
 * converts it to (`Host.calls()`). Every answer is the model's.
 */
import { select, type Selection } from 'd3';
import { loadModel, profiles, resolveProfile } from '../model/index';
import {
  Host,
  fdOfCalls,
  lastCall,
  placeFor,
  loadLookup,
  setupCalls,
  socketCount,
  withoutSocket,
  type Call,
  type CallLog,
  type CallResult,
  type Layout,
  type SockOpt,
} from '../model/lookup';
import { sayRefusal, type Refusal } from '../model/messages';
import { DEFAULT, MAX_CALLS, MAX_SOCKETS, NEW_SOCKET, readLog } from './bind-log';

export { MAX_CALLS, MAX_SOCKETS };
import { pageLang } from './site';
import { defineIsland, emit, hostOf, islandElement } from './element';

/** Options of the bind checker. */
export interface BindOptions {
  /** Kernel profile or release. @default "6.18" */
  kernel?: string;
  /** The calls (or a layout of the earlier form, which the model converts). @default two wildcard TCP listeners on 8080 with SO_REUSEPORT */
  layout?: CallLog | Layout;
}

/** The calls the "Add a call" menu offers. */
const ADDABLE = ['bind', 'listen', 'reuseport', 'reuseaddr', 'shutdown', 'close'] as const;
type Addable = (typeof ADDABLE)[number];

function words(lang: string) {
  return lang === 'zh-CN'
    ? {
        kernel: '内核',
        socket: '套接字',
        uid: 'UID',
        ok: '成功',
        refusal: (a: Refusal, rule: string) => `失败：${a.errno}${a.with !== null ? `（与套接字 ${a.with} 冲突）` : ''}。${rule}。`,
        ends: (r: CallResult) =>
          `；最终${r.closed ? '已关闭' : r.receiving ? '接收连接或数据报' : '不接收'}` +
          (r.randomPort !== null ? `，端口由内核从 ${r.randomPort.low}–${r.randomPort.high}（ip_local_port_range）中随机选取` : '') +
          (r.group !== null ? `，位于 reuseport 组 ${r.group}（成员 ${r.member}）` : ''),
        up: '上移',
        down: '下移',
        removeCall: '删除调用',
        removeSocket: '删除套接字',
        addSocket: '添加套接字',
        addCall: '添加调用',
        onSocket: '作用于',
        caption: '程序按顺序执行的系统调用，以及模型对每个调用给出的结果',
        bad: (why: string) => `调用序列无效：${why}`,
        tooManyCalls: (n: number) => `布局有 ${n} 个调用，检查器最多接受 ${MAX_CALLS} 个`,
        tooManySockets: (n: number) => `布局创建了 ${n} 个套接字，检查器最多接受 ${MAX_SOCKETS} 个`,
        notCalls: '布局的 calls 中有不是系统调用的条目',
        notJson: (why: string) => `<reuseport-bind>：layout 属性不是 JSON：${why}`,
        value: '取值',
        addr: '地址',
        port: '端口',
        proto: '协议',
        family: '地址族',
      }
    : {
        kernel: 'Kernel',
        socket: 'Socket',
        uid: 'UID',
        ok: 'ok',
        refusal: (a: Refusal, rule: string) =>
          `fails: ${a.errno}${a.with !== null ? ` (conflicts with socket ${a.with})` : ''}. ${rule.charAt(0).toUpperCase()}${rule.slice(1)}.`,
        ends: (r: CallResult) =>
          `; ends ${r.closed ? 'closed' : r.receiving ? 'receiving' : 'not receiving'}` +
          (r.randomPort !== null ? ` on a port the kernel drew at random from ${r.randomPort.low}–${r.randomPort.high} (ip_local_port_range)` : '') +
          (r.group !== null ? `, in reuseport group ${r.group} (member ${r.member})` : ''),
        up: 'Move up',
        down: 'Move down',
        removeCall: 'Remove call',
        removeSocket: 'Remove socket',
        addSocket: 'Add a socket',
        addCall: 'Add a call',
        onSocket: 'on socket',
        caption: "The program's calls in order, each with the model's answer",
        bad: (why: string) => `The calls are not valid: ${why}`,
        tooManyCalls: (n: number) => `the layout has ${n} calls; the checker takes at most ${MAX_CALLS}`,
        tooManySockets: (n: number) => `the layout makes ${n} sockets; the checker takes at most ${MAX_SOCKETS}`,
        notCalls: "an entry of the layout's calls is not a call",
        notJson: (why: string) => `<reuseport-bind>: the layout attribute is not JSON: ${why}`,
        value: 'value',
        addr: 'address',
        port: 'port',
        proto: 'protocol',
        family: 'family',
      };
}

/** The kernel's name of a socket option. */
function optName(o: SockOpt): string {
  if ('reuseaddr' in o) return 'SO_REUSEADDR';
  if ('reuseport' in o) return 'SO_REUSEPORT';
  if ('v6only' in o) return 'IPV6_V6ONLY';
  if ('bindtodevice' in o) return 'SO_BINDTODEVICE';
  if ('incomingCpu' in o) return 'SO_INCOMING_CPU';
  if ('linger' in o) return 'SO_LINGER';
  return 'SO_ATTACH_REUSEPORT_CBPF';
}

/** An option's value as C writes it (`struct linger` as `{l_onoff, l_linger}`), for the options the checker does not edit. */
function optValue(o: SockOpt): string {
  if ('bindtodevice' in o) return JSON.stringify(o.bindtodevice);
  if ('incomingCpu' in o) return String(o.incomingCpu);
  if ('linger' in o) return o.linger === null ? '{0, 0}' : `{1, ${o.linger}}`;
  if ('attachReuseport' in o) return o.attachReuseport.kind;
  return '';
}

type Row = Selection<HTMLDivElement, unknown, null, undefined>;

/** Mounts the checker into `el`; returns `dispose`. */
export async function mountBind(el: HTMLElement, options: BindOptions = {}): Promise<() => void> {
  await Promise.all([loadModel(), loadLookup()]);
  const lang = pageLang(el);
  const w = words(lang);
  // The menu lists profiles: a release given (6.14, 6.18.44) is shown as the profile it resolves to.
  const given = resolveProfile(options.kernel ?? '6.18').release;
  let kernel = `${given.major}.${given.minor}`;
  const read = readLog(kernel, options.layout ?? DEFAULT, w);
  const log = read.log;
  let readError = read.error;
  const root = select(el).append('div').attr('class', 'rl-bind');
  const top = root.append('div').attr('class', 'rl-bind-top');
  const id = `rl-bind-${Math.random().toString(36).slice(2, 8)}`;
  top.append('label').attr('for', `${id}-k`).text(`${w.kernel} `);
  const ksel = top.append('select').attr('id', `${id}-k`);
  ksel
    .selectAll('option')
    .data(profiles())
    .join('option')
    .attr('value', (p) => `${p.release.major}.${p.release.minor}`)
    .text((p) => `${p.release.major}.${p.release.minor}`);
  ksel.property('value', kernel).on('change', () => {
    kernel = String(ksel.property('value'));
    answer();
  });
  root.append('p').attr('class', 'rl-bind-caption').attr('id', `${id}-cap`).text(w.caption);
  const list = root.append('ol').attr('class', 'rl-bind-list').attr('start', 0).attr('aria-labelledby', `${id}-cap`);
  const err = root.append('p').attr('class', 'rl-errors').attr('role', 'alert');
  const tools = root.append('div').attr('class', 'rl-bind-tools');
  const addSock = tools.append('button').attr('type', 'button').text(w.addSocket);
  addSock.on('click', () => {
    const n = socketCount(log.calls);
    if (n >= MAX_SOCKETS || log.calls.length >= MAX_CALLS) return;
    log.calls.push(...setupCalls(n, NEW_SOCKET));
    edited();
  });
  const adder = tools.append('span').attr('class', 'rl-bind-adder');
  const kindSel = adder.append('select').attr('aria-label', w.addCall);
  kindSel
    .selectAll('option')
    .data(ADDABLE)
    .join('option')
    .attr('value', (d) => d)
    .text((d) => (d === 'reuseport' || d === 'reuseaddr' ? `setsockopt(SO_${d.toUpperCase()})` : `${d}()`));
  adder.append('span').text(` ${w.onSocket} `);
  const fdSel = adder.append('select').attr('aria-label', `${w.addCall}: ${w.onSocket}`);
  const addCall = adder.append('button').attr('type', 'button').text(w.addCall);
  addCall.on('click', () => {
    const fd = Number(fdSel.property('value'));
    if (!Number.isInteger(fd) || fd < 0 || log.calls.length >= MAX_CALLS) return;
    const call = newCall(kindSel.property('value') as Addable, fd);
    log.calls.splice(placeFor(log.calls, fd, call.call), 0, call);
    edited();
  });

  /** A call of `kind` on `fd`; a bind takes the address and port of the socket's last bind, else its family's wildcard on 8080. */
  function newCall(kind: Addable, fd: number): Call {
    if (kind === 'reuseport') return { call: 'setsockopt', fd, opt: { reuseport: true } };
    if (kind === 'reuseaddr') return { call: 'setsockopt', fd, opt: { reuseaddr: true } };
    if (kind !== 'bind') return { call: kind, fd };
    const last = log.calls[lastCall(log.calls, fd, 'bind')];
    if (last?.call === 'bind') return { ...last };
    const made = log.calls[lastCall(log.calls, fd, 'socket')];
    return { call: 'bind', fd, addr: made?.call === 'socket' && made.family === 'inet6' ? '::' : '0.0.0.0', port: 8080 };
  }

  /** After an edit of a call's field: the rows stay (and the focus with them); the answers are asked again. */
  function changed(): void {
    readError = undefined;
    answer();
  }

  /**
   * After calls were added, moved or removed: the rows are written again and
   * the answers asked again. `focus`: the row whose button takes the focus
   * back (the first of `glyphs` not disabled), since the one pressed is gone.
   */
  function edited(focus?: { call: number; glyphs: readonly string[] }): void {
    readError = undefined;
    draw();
    if (!focus || log.calls.length === 0) return;
    const at = Math.min(focus.call, log.calls.length - 1);
    const buttons = [...list.node()!.querySelectorAll<HTMLButtonElement>(`li[data-call="${at}"] .rl-bind-buttons button`)];
    const glyph = focus.glyphs.find((g) => buttons.some((b) => b.textContent === g && !b.disabled));
    buttons.find((b) => b.textContent === glyph)?.focus();
  }

  function outcome(a: Refusal | null | undefined): { text: string; ok: boolean } {
    if (a === undefined) return { text: '', ok: false };
    if (a === null) return { text: w.ok, ok: true };
    return { text: w.refusal(a, sayRefusal(lang, a)), ok: false };
  }

  /** A select of `values` in `row`, labelled, calling `set` on change. */
  function choice(row: Row, label: string, values: readonly string[], value: string, set: (v: string) => void): void {
    const s = row.append('select').attr('aria-label', label);
    s.selectAll('option')
      .data(values)
      .join('option')
      .attr('value', (d) => d)
      .text((d) => d);
    s.property('value', value).on('change', () => {
      set(String(s.property('value')));
      changed();
    });
  }

  /** A number or text input in `row`, labelled; `set` returns false for a value it refuses (the input goes back). */
  function field(row: Row, label: string, value: string, size: number, set: (v: string) => boolean): void {
    let kept = value;
    const i = row.append('input').attr('aria-label', label).attr('size', size).property('value', value);
    i.on('change', () => {
      const v = String(i.property('value')).trim();
      if (set(v)) {
        kept = v;
        changed();
      } else i.property('value', kept);
    });
  }

  const text = (row: Row, s: string) => row.append('span').attr('class', 'rl-mono').text(s);

  /** The call as C, its fields editable. */
  function callLine(row: Row, c: Call, fd: number): void {
    if (c.call === 'socket') {
      row.append('span').attr('class', 'rl-bind-name').text(`${w.socket} ${fd}`);
      text(row, `= socket(`);
      choice(row, `${w.socket} ${fd}: ${w.family}`, ['AF_INET', 'AF_INET6'], c.family === 'inet6' ? 'AF_INET6' : 'AF_INET', (v) => {
        c.family = v === 'AF_INET6' ? 'inet6' : 'inet';
      });
      choice(row, `${w.socket} ${fd}: ${w.proto}`, ['SOCK_STREAM', 'SOCK_DGRAM'], c.proto === 'udp' ? 'SOCK_DGRAM' : 'SOCK_STREAM', (v) => {
        c.proto = v === 'SOCK_DGRAM' ? 'udp' : 'tcp';
      });
      text(row, ')');
      const l = row.append('label').attr('class', 'rl-bind-field');
      l.append('span').text(w.uid);
      // Named per socket, like the other fields of the call: every socket's UID input said only "UID".
      const uid = l
        .append('input')
        .attr('type', 'number')
        .attr('min', 0)
        .attr('aria-label', `${w.socket} ${fd}: ${w.uid}`)
        .style('width', 'calc(5 * var(--rl-rem))')
        .property('value', c.uid);
      uid.on('change', () => {
        const v = Number(uid.property('value'));
        if (Number.isInteger(v) && v >= 0 && v < 2 ** 32) {
          c.uid = v;
          changed();
        } else uid.property('value', c.uid);
      });
      return;
    }
    if (c.call === 'setsockopt') {
      const o = c.opt;
      text(row, `setsockopt(${c.fd}, ${optName(o)}, `);
      if ('reuseaddr' in o || 'reuseport' in o || 'v6only' in o) {
        const key = 'reuseaddr' in o ? 'reuseaddr' : 'reuseport' in o ? 'reuseport' : 'v6only';
        const on = (o as Record<typeof key, boolean>)[key];
        const l = row.append('label').attr('class', 'rl-bind-check');
        const shown = l.append('span').attr('class', 'rl-mono');
        l.insert('input', 'span')
          .attr('type', 'checkbox')
          .attr('aria-label', `${optName(o)} ${w.value}`)
          .property('checked', on)
          .on('change', function () {
            const now = (this as HTMLInputElement).checked;
            c.opt = { [key]: now } as SockOpt;
            shown.text(now ? '1' : '0');
            changed();
          });
        shown.text(on ? '1' : '0');
      } else text(row, optValue(o));
      text(row, ')');
      return;
    }
    if (c.call === 'bind' || c.call === 'connect') {
      text(row, `${c.call}(${c.fd}, `);
      field(row, `${c.call}() ${w.addr}`, c.addr, 16, (v) => {
        if (!v || v.length > 64) return false;
        c.addr = v;
        return true;
      });
      text(row, ':');
      field(row, `${c.call}() ${w.port}`, String(c.port), 5, (v) => {
        const p = Number(v);
        if (!Number.isInteger(p) || p < 0 || p > 65535) return false;
        c.port = p;
        return true;
      });
      text(row, ')');
      return;
    }
    text(row, `${c.call}(${c.fd})`);
  }

  function move(i: number, by: -1 | 1): void {
    const j = i + by;
    if (j < 0 || j >= log.calls.length) return;
    [log.calls[i], log.calls[j]] = [log.calls[j]!, log.calls[i]!];
    // The focus follows the call moved, on the same button while it can move further.
    edited({ call: j, glyphs: by < 0 ? ['↑', '↓'] : ['↓', '↑'] });
  }

  /** The rows and the answers. */
  function draw(): void {
    rows();
    answer();
  }

  /** One row per call, its answer's paragraph empty until {@link answer}. */
  function rows(): void {
    const sockets = socketCount(log.calls);
    list.selectAll('li').remove();
    const fds = fdOfCalls(log.calls);
    log.calls.forEach((c, i) => {
      const fd = fds[i]!;
      const li = list.append('li').attr('class', `rl-bind-call rl-bind-${c.call}`).attr('data-call', i).attr('data-fd', fd);
      const row = li.append('div').attr('class', 'rl-bind-row') as unknown as Row;
      row.append('span').attr('class', 'rl-bind-index').text(`${i}.`);
      callLine(row, c, fd);
      const btns = row.append('span').attr('class', 'rl-bind-buttons');
      const btn = (label: string, glyph: string, disabled: boolean, act: () => void) =>
        btns.append('button').attr('type', 'button').attr('aria-label', label).attr('title', label).text(glyph).property('disabled', disabled).on('click', act);
      if (c.call !== 'socket') {
        btn(`${w.up}: ${i}`, '↑', i === 0, () => move(i, -1));
        btn(`${w.down}: ${i}`, '↓', i === log.calls.length - 1, () => move(i, 1));
        btn(`${w.removeCall} ${i}`, '×', false, () => {
          log.calls.splice(i, 1);
          edited({ call: i, glyphs: ['×', '↑', '↓'] });
        });
      } else
        btn(`${w.removeSocket} ${fd}`, '×', sockets <= 1, () => {
          log.calls = withoutSocket(log.calls, fd);
          edited({ call: i, glyphs: ['×', '↑', '↓'] });
        });
      li.append('p').attr('class', 'rl-bind-result');
    });
  }

  /** The model's answer to each call of the log as it is now, written under its row. */
  function answer(): void {
    let answers: (Refusal | null)[] = [];
    let results: CallResult[] = [];
    err.text(readError ? w.bad(readError) : '');
    try {
      const host = new Host(kernel, log);
      try {
        answers = host.answers();
        results = host.results();
      } finally {
        host.dispose();
      }
    } catch (e) {
      err.text(w.bad(e instanceof Error ? e.message : String(e)));
    }
    const sockets = socketCount(log.calls);
    addSock.property('disabled', sockets >= MAX_SOCKETS || log.calls.length >= MAX_CALLS);
    addCall.property('disabled', sockets === 0 || log.calls.length >= MAX_CALLS);
    const keep = fdSel.property('value');
    fdSel
      .selectAll('option')
      .data(Array.from({ length: sockets }, (_, i) => i))
      .join('option')
      .attr('value', (d) => d)
      .text((d) => String(d));
    if (keep !== '' && Number(keep) < sockets) fdSel.property('value', keep);
    emit(el, 'answered', { kernel, answers: answers.map((a) => a?.errno ?? 'ok') });
    const fds = fdOfCalls(log.calls);
    list.selectAll<HTMLLIElement, unknown>('li').each(function (_, i) {
      const c = log.calls[i]!;
      const o = outcome(answers[i]);
      const r = c.call === 'socket' ? results[fds[i]!] : undefined;
      select(this)
        .select('p.rl-bind-result')
        .attr('class', `rl-bind-result ${o.ok ? 'rl-bind-ok' : 'rl-bind-refused'}`)
        .text(r && o.ok ? `${o.text}${w.ends(r)}` : o.text);
    });
    hostOf(el).dataset.state = 'ready';
  }
  draw();
  return () => root.remove();
}

function readBind(el: HTMLElement): BindOptions {
  const raw = el.getAttribute('layout');
  let layout: CallLog | undefined;
  if (raw) {
    try {
      layout = JSON.parse(raw) as CallLog;
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      throw new Error(words(pageLang(el)).notJson(why));
    }
  }
  return { kernel: el.getAttribute('kernel') ?? undefined, layout };
}

export const ReuseportBindElement = islandElement(mountBind, readBind, ['kernel', 'layout']);

export const ReuseportBindCheckElement = islandElement(mountBind, readBind, ['kernel', 'layout']);

/** Registers `<reuseport-bind>` and its course-page name `<reuseport-bind-check>` once. */
export function defineBindElement(): void {
  defineIsland('reuseport-bind', ReuseportBindElement);
  defineIsland('reuseport-bind-check', ReuseportBindCheckElement);
}
