/**
 * The bind checker `<reuseport-bind kernel="6.18" layout='{"sockets":[…]}'>`:
 * sockets in bind order (the agent's `predict --layout` format), each
 * editable; for each, the model's answer to its bind(), listen() and program
 * attach calls: success, or the errno, the kernel rule and the socket it
 * conflicts with. Every answer is the model's `Host`.
 */
import { select } from 'd3';
import { loadModel, profiles } from '../model/index';
import { Host, loadLookup, type CallResult, type Layout, type SocketSpec } from '../model/lookup';
import { sayRefusal } from '../model/messages';
import { pageLang } from './site';
import { defineIsland, emit, hostOf, islandElement } from './element';

/** Options of the bind checker. */
export interface BindOptions {
  /** Kernel profile or release. @default "6.18" */
  kernel?: string;
  /** The sockets, in bind order. @default two wildcard TCP listeners on 8080 with SO_REUSEPORT */
  layout?: Layout;
}

/** At most this many sockets, so every edit answers at once. */
export const MAX_SOCKETS = 32;

const DEFAULT: Layout = {
  sockets: [
    { family: 'inet', proto: 'tcp', addr: '0.0.0.0', port: 8080, reuseport: true },
    { family: 'inet', proto: 'tcp', addr: '0.0.0.0', port: 8080, reuseport: true },
  ],
} as unknown as Layout;

function words(lang: string) {
  return lang === 'zh-CN'
    ? {
        kernel: '内核',
        socket: '套接字',
        addr: '地址',
        port: '端口',
        uid: 'UID',
        state: '之后',
        result: '结果',
        ok: '成功',
        add: '添加套接字',
        remove: '删除',
        conflicts: (n: number) => `与套接字 ${n} 冲突`,
        refused: '被拒绝',
        listenWord: 'listen()',
        bindWord: 'bind()',
        attachWord: '挂载程序',
        caption: '每个套接字按顺序执行 bind()（TCP 还有 listen()）时，模型给出的结果',
        bad: '布局无效',
      }
    : {
        kernel: 'Kernel',
        socket: 'Socket',
        addr: 'Address',
        port: 'Port',
        uid: 'UID',
        state: 'Then',
        result: 'Result',
        ok: 'ok',
        add: 'Add a socket',
        remove: 'Remove',
        conflicts: (n: number) => `conflicts with socket ${n}`,
        refused: 'refused',
        listenWord: 'listen()',
        bindWord: 'bind()',
        attachWord: 'attach',
        caption: "The model's answer to each socket's bind() (and listen() for TCP), in order",
        bad: 'The layout is not valid',
      };
}

function familyOf(addr: string): 'inet' | 'inet6' {
  return addr.includes(':') ? 'inet6' : 'inet';
}

/** Mounts the checker into `el`; returns `dispose`. */
export async function mountBind(el: HTMLElement, options: BindOptions = {}): Promise<() => void> {
  await Promise.all([loadModel(), loadLookup()]);
  const lang = pageLang(el);
  const w = words(lang);
  const given = structuredClone(options.layout ?? DEFAULT);
  const sockets: SocketSpec[] = given.sockets.slice(0, MAX_SOCKETS);
  // The rest of the layout (listenOrder, closed, …) applies while the sockets are only edited, not removed.
  let rest: Omit<Layout, 'sockets'> | undefined = given;
  let kernel = options.kernel ?? '6.18';
  const root = select(el).append('div').attr('class', 'rl-bind');
  const top = root.append('div').attr('class', 'rl-bind-top');
  const kid = `rl-bind-k-${Math.random().toString(36).slice(2, 8)}`;
  top.append('label').attr('for', kid).text(`${w.kernel} `);
  const ksel = top.append('select').attr('id', kid);
  ksel
    .selectAll('option')
    .data(profiles())
    .join('option')
    .attr('value', (p) => `${p.release.major}.${p.release.minor}`)
    .text((p) => `${p.release.major}.${p.release.minor}`);
  ksel.property('value', kernel).on('change', () => {
    kernel = String(ksel.property('value'));
    draw();
  });
  root.append('p').attr('class', 'rl-bind-caption').text(w.caption);
  const list = root.append('ol').attr('class', 'rl-bind-list');
  const err = root.append('p').attr('class', 'rl-errors').attr('role', 'alert');
  const add = root.append('button').attr('type', 'button').text(w.add);
  add.on('click', () => {
    if (sockets.length >= MAX_SOCKETS) return;
    const last = sockets[sockets.length - 1];
    sockets.push(structuredClone(last ?? DEFAULT.sockets[0]!));
    rest = undefined;
    draw();
  });

  function outcome(r: CallResult | undefined): { text: string; ok: boolean } {
    if (!r) return { text: '', ok: false };
    const parts: string[] = [];
    const ref = (what: string, x: NonNullable<CallResult['bind']>) =>
      `${what} ${w.refused}: ${x.errno}${x.with !== null ? ` (${w.conflicts(x.with)})` : ''}. ${sayRefusal(lang, x)}`;
    if (r.bind) parts.push(ref(w.bindWord, r.bind));
    if (r.listen) parts.push(ref(w.listenWord, r.listen));
    if (r.attach) parts.push(ref(w.attachWord, r.attach));
    if (parts.length === 0) return { text: `${w.ok}${r.group !== null ? ` (group ${r.group}, member ${r.member})` : ''}`, ok: true };
    return { text: parts.join(' '), ok: false };
  }

  function draw(): void {
    let results: CallResult[] = [];
    err.text('');
    try {
      const host = new Host(kernel, { ...(rest ?? {}), sockets } as unknown as Layout);
      results = host.results();
      host.dispose();
    } catch (e) {
      err.text(`${w.bad}: ${e instanceof Error ? e.message : String(e)}`);
    }
    add.property('disabled', sockets.length >= MAX_SOCKETS);
    emit(el, 'answered', { kernel, results: results.map((r) => outcome(r).ok) });
    list.selectAll('li').remove();
    sockets.forEach((s, i) => {
      const li = list.append('li').attr('class', 'rl-bind-sock');
      const o = outcome(results[i]);
      const row = li.append('div').attr('class', 'rl-bind-row');
      row.append('span').attr('class', 'rl-bind-name').text(`${w.socket} ${i}`);
      const labelled = (text: string) => {
        const l = row.append('label').attr('class', 'rl-bind-field');
        l.append('span').text(text);
        return l;
      };
      const proto = labelled('proto').append('select');
      proto
        .selectAll('option')
        .data(['tcp', 'udp'])
        .join('option')
        .attr('value', (d) => d)
        .text((d) => d);
      proto.property('value', s.proto).on('change', () => {
        s.proto = proto.property('value');
        draw();
      });
      const addr = labelled(w.addr).append('input').attr('size', 14).property('value', s.addr);
      addr.on('change', () => {
        s.addr = String(addr.property('value')).trim();
        s.family = familyOf(s.addr);
        draw();
      });
      const port = labelled(w.port).append('input').attr('type', 'number').attr('min', 0).attr('max', 65535).style('width', '6rem').property('value', s.port);
      port.on('change', () => {
        const v = Number(port.property('value'));
        if (Number.isInteger(v) && v >= 0 && v <= 65535) s.port = v;
        draw();
      });
      for (const opt of ['reuseaddr', 'reuseport'] as const) {
        const l = row.append('label').attr('class', 'rl-bind-check');
        l.append('input')
          .attr('type', 'checkbox')
          .property('checked', !!s[opt])
          .on('change', function () {
            s[opt] = (this as HTMLInputElement).checked;
            draw();
          });
        l.append('span').text(opt === 'reuseaddr' ? 'SO_REUSEADDR' : 'SO_REUSEPORT');
      }
      const uid = labelled('UID')
        .append('input')
        .attr('type', 'number')
        .attr('min', 0)
        .style('width', '5rem')
        .property('value', s.uid ?? 0);
      uid.on('change', () => {
        const v = Number(uid.property('value'));
        if (Number.isInteger(v) && v >= 0 && v < 2 ** 32) s.uid = v;
        draw();
      });
      const st = labelled(w.state).append('select');
      st.selectAll('option')
        .data(['listen', 'bound', 'time_wait'])
        .join('option')
        .attr('value', (d) => d)
        .text((d) => d);
      st.property('value', s.state ?? 'listen').on('change', () => {
        s.state = st.property('value');
        draw();
      });
      row
        .append('button')
        .attr('type', 'button')
        .attr('class', 'rl-bind-remove')
        .attr('aria-label', `${w.remove} ${w.socket} ${i}`)
        .text('×')
        .property('disabled', sockets.length <= 1)
        .on('click', () => {
          sockets.splice(i, 1);
          rest = undefined;
          draw();
        });
      li.append('p')
        .attr('class', `rl-bind-result ${o.ok ? 'rl-bind-ok' : 'rl-bind-refused'}`)
        .text(o.text);
    });
    hostOf(el).dataset.state = 'ready';
  }
  draw();
  return () => root.remove();
}

function readBind(el: HTMLElement): BindOptions {
  const raw = el.getAttribute('layout');
  let layout: Layout | undefined;
  if (raw) {
    try {
      layout = JSON.parse(raw) as Layout;
    } catch (e) {
      throw new Error(`<reuseport-bind>: the layout attribute is not JSON: ${e instanceof Error ? e.message : String(e)}`);
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
