// SPDX-License-Identifier: MIT OR GPL-2.0
//
// observe --trace: the kernel's own reuseport choice, one record per SYN or
// datagram to the watched port. Attached to reuseport_select_sock(), which
// every listener lookup that reaches an SO_REUSEPORT group calls with the
// hash it computed (net/core/sock_reuseport.c, 4.5 UDP / 4.6 TCP to 7.x):
// as fexit where the kernel has BTF trampolines, or as a kprobe/kretprobe
// pair. Compiled by the agent's build (build.rs) against the running kernel's
// BTF; CO-RE relocates the field offsets on the kernel it is loaded into.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#define AF_INET6 10

// The kernel only lets GPL-compatible programs call the helpers used here.
char LICENSE[] SEC("license") = "Dual MIT/GPL";

// The record layout is mirrored by `Record` in load.rs (repr(C)).
#define F_PROGRAM 1      // the group had a BPF program attached (reuse->prog)
#define F_DROPPED 2      // the selection returned an error (SK_DROP)
#define F_NO_SOCKET 4    // the selection returned NULL
#define F_SLOT_UNKNOWN 8 // the chosen socket is past the scanned part of socks[]
#define F_IPV6 16        // the packet is IPv6
#define F_EHASH 32       // tracepoint, TCP: the hash is the connection's ehash
#define F_NO_HASH 64     // tracepoint, UDP: no hash is kept for a datagram

#define MAX_SCAN 256     // socks[] entries searched for the chosen socket

struct record {
	__u64 t_ns;
	__u64 inode;          // chosen socket's inode (0: none)
	__u32 hash;           // the hash the kernel passed to reuseport_select_sock
	__u32 cpu;
	__u32 saddr[4];       // network order; IPv4 in saddr[0]
	__u32 daddr[4];
	__u16 sport;          // network order
	__u16 dport;
	__u16 num_socks;
	__u16 num_closed_socks;
	__u16 incoming_cpu;   // members with SO_INCOMING_CPU set (6.2+; 0 before)
	__u16 slot;           // index of the chosen socket in socks[]
	__u32 reuseport_id;   // the group's id (4.19+; 0 before)
	__u32 flags;
};

// Never written: it makes the skeleton carry `struct record`, so that the
// agent checks its decoder's offsets against clang's layout (load.rs).
struct record layout_record = {};

// Set by the agent before loading.
const volatile __u16 target_port = 0;     // host order
const volatile __u16 target_proto = 0;    // IPPROTO_TCP or IPPROTO_UDP
const volatile __u64 max_per_sec = 0;     // per CPU; 0: unbounded

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); // resized by the agent before loading
} records SEC(".maps");

// 0 seen, 1 lost: ring buffer full, 2 lost: over the rate, 3 no packet
#define C_SEEN 0
#define C_FULL 1
#define C_RATE 2
#define C_NO_SKB 3
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct window {
	__u64 start;
	__u64 n;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct window);
} rate SEC(".maps");

// The kprobe's arguments, kept for its kretprobe on the same CPU (the
// lookup runs with bottom halves off, so nothing else selects in between).
struct pending_args {
	struct sock *sk;
	struct sk_buff *skb;
	__u32 hash;
	__u32 valid;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pending_args);
} pending SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);
	if (c)
		*c += 1;
}

static __always_inline int over_rate(void)
{
	__u32 zero = 0;
	struct window *w;
	__u64 now;

	if (!max_per_sec)
		return 0;
	w = bpf_map_lookup_elem(&rate, &zero);
	if (!w)
		return 1;
	now = bpf_ktime_get_ns();
	if (now - w->start >= 1000000000ULL) {
		w->start = now;
		w->n = 0;
	}
	if (w->n >= max_per_sec)
		return 1;
	w->n += 1;
	return 0;
}

// The group's state and where `ret` sits in socks[].
static __always_inline void group_of(struct record *r, struct sock *sk, struct sock *ret)
{
	struct sock_reuseport *reuse;
	int i;

	reuse = BPF_CORE_READ(sk, sk_reuseport_cb);
	if (reuse) {
		r->num_socks = BPF_CORE_READ(reuse, num_socks);
		if (bpf_core_field_exists(reuse->num_closed_socks))
			r->num_closed_socks = BPF_CORE_READ(reuse, num_closed_socks);
		if (bpf_core_field_exists(reuse->incoming_cpu))
			r->incoming_cpu = BPF_CORE_READ(reuse, incoming_cpu);
		if (bpf_core_field_exists(reuse->reuseport_id))
			r->reuseport_id = BPF_CORE_READ(reuse, reuseport_id);
		if (BPF_CORE_READ(reuse, prog))
			r->flags |= F_PROGRAM;
	}
	if ((unsigned long)ret >= (unsigned long)-4095) {
		r->flags |= F_DROPPED;
		r->slot = 0xffff;
	} else if (!ret) {
		r->flags |= F_NO_SOCKET;
		r->slot = 0xffff;
	} else {
		r->inode = BPF_CORE_READ(ret, sk_socket, file, f_inode, i_ino);
		r->slot = 0xffff;
		r->flags |= F_SLOT_UNKNOWN;
		if (reuse) {
			// socks[] is a flexible array: its offset is relocated, the index added here.
			unsigned long base = (unsigned long)reuse + bpf_core_field_offset(reuse->socks);

			for (i = 0; i < MAX_SCAN; i++) {
				struct sock *s = NULL;

				if (i >= r->num_socks)
					break;
				bpf_probe_read_kernel(&s, sizeof(s), (void *)(base + i * sizeof(struct sock *)));
				if (s == ret) {
					r->slot = i;
					r->flags &= ~F_SLOT_UNKNOWN;
					break;
				}
			}
		}
	}
}

// The packet's addresses and ports from its headers.
static __always_inline void tuple_of(struct record *r, struct sk_buff *skb)
{
	unsigned char *head = BPF_CORE_READ(skb, head);
	__u16 nh = BPF_CORE_READ(skb, network_header);
	__u16 th = BPF_CORE_READ(skb, transport_header);
	__u8 version = 0;

	bpf_probe_read_kernel(&version, 1, head + nh);
	if ((version >> 4) == 6) {
		r->flags |= F_IPV6;
		bpf_probe_read_kernel(r->saddr, 16, head + nh + 8);
		bpf_probe_read_kernel(r->daddr, 16, head + nh + 24);
	} else {
		bpf_probe_read_kernel(&r->saddr[0], 4, head + nh + 12);
		bpf_probe_read_kernel(&r->daddr[0], 4, head + nh + 16);
	}
	// TCP and UDP both open with the source and destination ports.
	bpf_probe_read_kernel(&r->sport, 2, head + th);
	bpf_probe_read_kernel(&r->dport, 2, head + th + 2);
}

// Whether a call is about the watched port and protocol (counted as seen).
static __always_inline int watched(struct sock *sk)
{
	if (!sk)
		return 0;
	if (BPF_CORE_READ(sk, __sk_common.skc_num) != target_port)
		return 0;
	if (BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) != target_proto)
		return 0;
	count(C_SEEN);
	return 1;
}

static __always_inline struct record *reserve(void)
{
	struct record *r;

	if (over_rate()) {
		count(C_RATE);
		return NULL;
	}
	r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
	if (!r) {
		count(C_FULL);
		return NULL;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->t_ns = bpf_ktime_get_ns();
	r->cpu = bpf_get_smp_processor_id();
	return r;
}

static __always_inline void emit(struct sock *sk, __u32 hash, struct sk_buff *skb, struct sock *ret)
{
	struct record *r;

	if (!watched(sk))
		return;
	if (!skb) {
		count(C_NO_SKB);
		return;
	}
	r = reserve();
	if (!r)
		return;
	r->hash = hash;
	tuple_of(r, skb);
	group_of(r, sk, ret);
	bpf_ringbuf_submit(r, 0);
}

SEC("fexit/reuseport_select_sock")
int BPF_PROG(fexit_select, struct sock *sk, u32 hash, struct sk_buff *skb, int hdr_len, struct sock *ret)
{
	emit(sk, hash, skb, ret);
	return 0;
}

SEC("kprobe/reuseport_select_sock")
int BPF_KPROBE(kprobe_select, struct sock *sk, u32 hash, struct sk_buff *skb)
{
	__u32 zero = 0;
	struct pending_args *p = bpf_map_lookup_elem(&pending, &zero);

	if (p) {
		p->sk = sk;
		p->hash = hash;
		p->skb = skb;
		p->valid = 1;
	}
	return 0;
}

SEC("kretprobe/reuseport_select_sock")
int BPF_KRETPROBE(kretprobe_select, struct sock *ret)
{
	__u32 zero = 0;
	struct pending_args *p = bpf_map_lookup_elem(&pending, &zero);

	if (!p || !p->valid)
		return 0;
	p->valid = 0;
	emit(p->sk, p->hash, p->skb, ret);
	return 0;
}

// Where fexit and kprobes are not to be had: the tracepoint every default
// sk_data_ready() fires (6.8+), on the socket the kernel chose, right after
// it queued what arrived. TCP: a listener whose accept queue just took a
// connection (the request at its tail holds the 4-tuple and its ehash);
// UDP: a socket whose receive queue just took a datagram (its tail).
SEC("tp_btf/sk_data_ready")
int BPF_PROG(data_ready, struct sock *sk)
{
	struct record *r;

	if (!watched(sk))
		return 0;
	if (target_proto == IPPROTO_TCP) {
		struct request_sock *req;

		if (BPF_CORE_READ(sk, __sk_common.skc_state) != TCP_LISTEN)
			return 0;
		req = BPF_CORE_READ((struct inet_connection_sock *)sk, icsk_accept_queue.rskq_accept_tail);
		if (!req) {
			count(C_NO_SKB);
			return 0;
		}
		r = reserve();
		if (!r)
			return 0;
		r->flags |= F_EHASH;
		r->hash = BPF_CORE_READ(req, __req_common.skc_hash);
		if (BPF_CORE_READ(req, __req_common.skc_family) == AF_INET6) {
			r->flags |= F_IPV6;
			BPF_CORE_READ_INTO(&r->saddr, req, __req_common.skc_v6_daddr.in6_u.u6_addr32);
			BPF_CORE_READ_INTO(&r->daddr, req, __req_common.skc_v6_rcv_saddr.in6_u.u6_addr32);
		} else {
			r->saddr[0] = BPF_CORE_READ(req, __req_common.skc_daddr);
			r->daddr[0] = BPF_CORE_READ(req, __req_common.skc_rcv_saddr);
		}
		r->sport = BPF_CORE_READ(req, __req_common.skc_dport);
		r->dport = bpf_htons(BPF_CORE_READ(req, __req_common.skc_num));
	} else {
		struct sk_buff *tail = BPF_CORE_READ(sk, sk_receive_queue.prev);

		if (!tail || (void *)tail == (void *)&sk->sk_receive_queue) {
			count(C_NO_SKB);
			return 0;
		}
		r = reserve();
		if (!r)
			return 0;
		r->flags |= F_NO_HASH;
		tuple_of(r, tail);
	}
	group_of(r, sk, sk);
	bpf_ringbuf_submit(r, 0);
	return 0;
}
