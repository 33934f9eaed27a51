//! Pasted tuple text, line by line (wasm/model/src/paste/tuple_lines.rs and
//! `ReuseportGroup::explain_text`): what the page's worker receives, as
//! JSON, with the line numbers of the text and never a field a variant
//! does not have.

use reuseport_model::explain::LineAnswer;
use reuseport_model::paste::{parse_tuples, ParsedLine};
use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup};
use serde_json::json;

const TEXT: &str =
    "127.0.0.9 40000 127.0.0.1 8080\n127.0.0.9 99999 127.0.0.1 8080\n\n# note\n127.0.0.9:40000 127.0.0.1:9\n";

#[test]
fn parsed_lines_keep_the_text_line_numbers_and_write_a_tuple_or_an_error() {
    let parsed = parse_tuples(TEXT);
    let lines: Vec<u32> = parsed
        .iter()
        .map(|p| match p {
            ParsedLine::Tuple { line, .. } | ParsedLine::Error { line, .. } => *line,
        })
        .collect();
    assert_eq!(
        lines,
        [1, 2, 5],
        "blank and # lines are skipped, not renumbered"
    );
    let v = serde_json::to_value(&parsed).unwrap();
    assert_eq!(
        v[0],
        json!({"line": 1, "tuple": {"saddr": "127.0.0.9", "sport": 40000, "daddr": "127.0.0.1", "dport": 8080}})
    );
    assert_eq!(v[1]["line"], 2);
    assert_eq!(v[1]["error"]["kind"], "port");
    assert_eq!(v[1]["error"]["field"], "sourcePort");
    assert_eq!(v[1]["error"]["value"], "99999");
    assert!(v[1].get("tuple").is_none(), "{}", v[1]);
    assert_eq!(v[2]["tuple"]["dport"], 9);
}

#[test]
fn explained_lines_are_an_answer_a_line_error_or_the_groups_refusal() {
    let spec = GroupSpec::new(
        Proto::Tcp,
        8,
        "127.0.0.1".parse().unwrap(),
        8080,
        Keys::default(),
    );
    let g = ReuseportGroup::build(Profile::named("6.18").unwrap(), &spec).unwrap();
    let answers = g.explain_text(TEXT, 0);
    assert_eq!(answers.len(), 3);
    match &answers[0] {
        LineAnswer::Explain {
            line: 1, explain, ..
        } => assert!(explain.listener.is_some()),
        a => panic!("line 1: {a:?}"),
    }
    assert!(matches!(answers[1], LineAnswer::Error { line: 2, .. }));
    // Port 9 is not the group's: the model's sentence says the kernel finds
    // no listener there.
    match &answers[2] {
        LineAnswer::Refused {
            line: 5, refused, ..
        } => {
            assert!(refused.contains("port 9"), "{refused}")
        }
        a => panic!("line 5: {a:?}"),
    }
    let v = serde_json::to_value(&answers).unwrap();
    for (a, only) in v
        .as_array()
        .unwrap()
        .iter()
        .zip(["explain", "error", "refused"])
    {
        let keys: Vec<&str> = a.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys.len(), 2, "{a}");
        assert!(keys.contains(&"line") && keys.contains(&only), "{a}");
    }
}
