//! The model's outcomes in English: the sentence table `messages/en.json`
//! (the same table the site uses for its English pages), embedded at build
//! time, and a renderer that fills a template's `{placeholders}` from the
//! fields of a tagged value (`reuseport_model::message`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::Value;

use reuseport_model::message::Refusal;
use reuseport_model::reuseport::ebpf::{EbpfEnd, ElfError, MapRefusal};
use reuseport_model::SetupError;

/// The English table, as written in the repository.
const EN: &str = include_str!("../../messages/en.json");

/// The English sentence table.
fn english() -> &'static BTreeMap<String, String> {
    static TABLE: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str(EN).expect("messages/en.json is a JSON object of strings")
    })
}

/// How a field's value reads inside a sentence: strings as they are,
/// numbers in decimal, a release `{major, minor}` as `6.18`.
fn field_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Object(o) => match (o.get("major"), o.get("minor")) {
            (Some(major), Some(minor)) => format!("{major}.{minor}"),
            _ => v.to_string(),
        },
        other => other.to_string(),
    }
}

/// Fills `template`'s `{name}` placeholders: from `given` first (already
/// rendered parts), then from the fields of `fields`. A placeholder with no
/// value stays as written.
fn fill(template: &str, fields: &Value, given: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                let name = &after[..close];
                match given.iter().find(|(n, _)| *n == name) {
                    Some((_, text)) => out.push_str(text),
                    None => match fields.get(name) {
                        Some(v) => out.push_str(&field_text(v)),
                        None => out.push_str(&rest[open..open + close + 2]),
                    },
                }
                rest = &after[close + 1..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Says `value`, a value of the message type whose table name is `group`
/// (`refusal_rule` for `RefusalRule`): the template `group.kind` for a
/// tagged enum, `group` for a struct. Falls back to the key itself when the
/// table lacks it (the tables' test sees that this never happens).
pub fn say(group: &str, value: &impl Serialize) -> String {
    let fields = serde_json::to_value(value).expect("message values serialize");
    say_with(group, &fields, &[])
}

fn say_with(group: &str, fields: &Value, given: &[(&str, String)]) -> String {
    let key = match fields.get("kind").and_then(Value::as_str) {
        Some(kind) => format!("{group}.{kind}"),
        None => group.to_string(),
    };
    // A field that is a kernel source reads as its own template.
    let mut given = given.to_vec();
    if let Some(o) = fields.as_object() {
        for (name, v) in o {
            if v.get("func").is_some() && v.get("file").is_some() {
                given.push((name.as_str(), say_with("kernel_source", v, &[])));
            }
        }
    }
    match english().get(&key) {
        Some(t) => fill(t, fields, &given),
        None => key,
    }
}

/// A refusal in one sentence: the rule and where the kernel applies it.
pub fn refusal(r: &Refusal) -> String {
    let fields = serde_json::to_value(r).expect("refusals serialize");
    say_with(
        "refusal",
        &fields,
        &[("rule", say("refusal_rule", &r.rule))],
    )
}

/// How an eBPF run ended (`ebpf_end.<kind>`), its reason said by its own
/// template (`ebpf_unknown.<kind>`, `ebpf_fault.<kind>`) and a helper's
/// operand by `ui.ebpf.operand.<arg>`.
pub fn ebpf_end(end: &EbpfEnd) -> String {
    let fields = serde_json::to_value(end).expect("runs serialize");
    let mut given = Vec::new();
    for (field, group) in [("what", "ebpf_unknown"), ("why", "ebpf_fault")] {
        if let Some(reason) = fields.get(field) {
            let operand = reason
                .get("arg")
                .and_then(Value::as_str)
                .map(|arg| ("arg", say_key(&format!("ui.ebpf.operand.{arg}"))));
            given.push((field, say_with(group, reason, &Vec::from_iter(operand))));
        }
    }
    say_with("ebpf_end", &fields, &given)
}

/// A group's refusal of a packet, in English: an eBPF run that does not
/// decide is said by the sentence tables ([`ebpf_end`]), the others by
/// the model's own message.
pub fn setup_error(e: &SetupError) -> String {
    match e {
        SetupError::EbpfUndecided { end } => ebpf_end(end),
        SetupError::EbpfInput { why } => map_refusal(why),
        other => other.to_string(),
    }
}

/// Why maps cannot be built as given (`map_refusal.<kind>`), a
/// definition's fault said by its own template (`map_def_problem.<kind>`).
pub fn map_refusal(r: &MapRefusal) -> String {
    let fields = serde_json::to_value(r).expect("refusals serialize");
    let why = fields
        .get("why")
        .map(|why| ("why", say_with("map_def_problem", why, &[])));
    say_with("map_refusal", &fields, &Vec::from_iter(why))
}

/// Why an ELF object could not be read (`elf_error.<kind>`), a BTF
/// fault (`btf_problem.<kind>`) or a map definition's
/// (`map_def_problem.<kind>`) said by its own template.
pub fn elf_error(e: &ElfError) -> String {
    let fields = serde_json::to_value(e).expect("reader errors serialize");
    let why = match e {
        ElfError::Btf { why } | ElfError::BtfMember { why, .. } => Some(say("btf_problem", why)),
        ElfError::MapDef { why, .. } => Some(say("map_def_problem", why)),
        _ => None,
    };
    let given = Vec::from_iter(why.map(|w| ("why", w)));
    say_with("elf_error", &fields, &given)
}

/// The template at `key` as written (no placeholders to fill).
fn say_key(key: &str) -> String {
    english()
        .get(key)
        .cloned()
        .unwrap_or_else(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reuseport_model::message::{Errno, KernelSource, RefusalRule};
    use reuseport_model::Release;

    #[test]
    fn a_refusal_reads_as_its_rule_and_kernel_source() {
        let r = Refusal {
            errno: Errno::Eaddrinuse,
            rule: RefusalRule::UidsDiffer {
                uid: 0,
                other_uid: 1000,
            },
            source: KernelSource::new(
                "inet_bind_conflict",
                "net/ipv4/inet_connection_sock.c",
                Release::new(6, 12),
            ),
            with: Some(0),
        };
        assert_eq!(
            refusal(&r),
            "both set SO_REUSEPORT, but their owners differ (UID 0 and 1000) \
             (inet_bind_conflict, net/ipv4/inet_connection_sock.c, kernel 6.12)"
        );
    }

    #[test]
    fn an_undecided_ebpf_run_reads_as_its_reason_with_the_operand_named() {
        use reuseport_model::reuseport::ebpf::{EbpfFault, EbpfUnknown, Operand};
        // The words are the table's: each sentence is checked against its
        // templates, so an edit to en.json keeps this passing only if the
        // numbers and the operand still land where the fields say.
        let end = EbpfEnd::Fault {
            pc: 7,
            why: Box::new(EbpfFault::ArgPastPacket { arg: Operand::Key }),
        };
        let said = setup_error(&SetupError::EbpfUndecided { end });
        let operand = say_key("ui.ebpf.operand.key");
        assert!(said.contains('7') && said.contains(&operand), "{said}");
        assert!(!said.contains('{'), "every placeholder filled: {said}");
        let end = EbpfEnd::Unknown {
            pc: 5,
            what: Box::new(EbpfUnknown::PacketByte { at: 6 }),
        };
        let said = ebpf_end(&end);
        assert!(said.contains("data+6") && said.contains('5'), "{said}");
        assert!(!said.contains('{'), "{said}");
    }

    #[test]
    fn a_refused_map_fill_reads_with_its_map_key_and_numbers() {
        use reuseport_model::reuseport::ebpf::MapDefProblem;
        let said = setup_error(&SetupError::EbpfInput {
            why: MapRefusal::NoListener {
                map: "socks".into(),
                key: "3".into(),
                listener: 9,
                members: 4,
            },
        });
        assert!(
            said.contains("socks")
                && said.contains('3')
                && said.contains('9')
                && said.contains('4'),
            "{said}"
        );
        assert!(!said.contains('{'), "every placeholder filled: {said}");
        let said = map_refusal(&MapRefusal::Def {
            map: "socks".into(),
            why: MapDefProblem::KeySize {
                map_type: "BPF_MAP_TYPE_REUSEPORT_SOCKARRAY".into(),
                key_size: 8,
            },
        });
        assert!(
            said.contains("socks") && said.contains("REUSEPORT_SOCKARRAY") && said.contains('8'),
            "{said}"
        );
        assert!(!said.contains('{'), "{said}");
    }

    #[test]
    fn a_bad_elf_object_reads_with_its_section_and_numbers() {
        use reuseport_model::reuseport::ebpf::BtfProblem;
        let said =
            elf_error(&reuseport_model::reuseport::ebpf::read(b"not an object").unwrap_err());
        assert!(said.contains("ELF") && said.contains("clang"), "{said}");
        let said = elf_error(&ElfError::BtfMember {
            map: "socks".into(),
            member: "key".into(),
            why: BtfProblem::TypeOutOfRange { id: 77 },
        });
        assert!(
            said.contains("socks") && said.contains("key") && said.contains("77"),
            "{said}"
        );
        assert!(!said.contains('{'), "every placeholder filled: {said}");
    }

    #[test]
    fn unknown_placeholders_and_stray_braces_stay_as_written() {
        let v = serde_json::json!({"a": 1});
        assert_eq!(fill("{a} {b} {", &v, &[]), "1 {b} {");
    }
}
