//! OTLP/HTTP's request body (`ExportTraceServiceRequest`), encoded by hand: the few messages
//! of `opentelemetry/proto/{collector/trace,trace,common,resource}/v1` huddle fills, with their
//! field numbers (`http/protobuf`), or in OTLP/JSON (`http/json`). Pure.

use serde_json::json;

use super::spans::{Attr, Span, SpanEvent, Value};

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, u64::from((field << 3) | u32::from(wire)));
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, LEN);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn string(out: &mut Vec<u8>, field: u32, s: &str) {
    bytes(out, field, s.as_bytes());
}

fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, FIXED64);
    out.extend_from_slice(&v.to_le_bytes());
}

fn message(out: &mut Vec<u8>, field: u32, build: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    build(&mut inner);
    bytes(out, field, &inner);
}

/// `AnyValue`: 1 string, 2 bool, 3 int64, 4 double, 5 array.
fn any_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Str(s) => string(out, 1, s),
        Value::Bool(b) => {
            key(out, 2, VARINT);
            varint(out, u64::from(*b));
        }
        Value::Int(i) => {
            key(out, 3, VARINT);
            // Two's complement: a negative int64 takes ten bytes.
            varint(out, *i as u64);
        }
        Value::Double(d) => fixed64(out, 4, d.to_bits()),
        Value::Strs(list) => message(out, 5, |array| {
            for s in list {
                message(array, 1, |item| string(item, 1, s));
            }
        }),
    }
}

/// `KeyValue { 1: key, 2: value }`.
fn attribute(out: &mut Vec<u8>, field: u32, a: &Attr) {
    message(out, field, |kv| {
        string(kv, 1, &a.0);
        message(kv, 2, |v| any_value(v, &a.1));
    });
}

/// `Span.Event { 1: time, 2: name, 3: attributes }`.
fn event(out: &mut Vec<u8>, e: &SpanEvent) {
    message(out, 11, |m| {
        fixed64(m, 1, e.time_ns);
        string(m, 2, &e.name);
        for a in &e.attributes {
            attribute(m, 3, a);
        }
    });
}

/// `Span`: 1 trace_id, 2 span_id, 4 parent_span_id, 5 name, 6 kind, 7 start, 8 end,
/// 9 attributes, 11 events, 15 status { 2: message, 3: code }.
fn span(out: &mut Vec<u8>, s: &Span) {
    message(out, 2, |m| {
        bytes(m, 1, &s.trace_id);
        bytes(m, 2, &s.span_id);
        if let Some(parent) = &s.parent {
            bytes(m, 4, parent);
        }
        string(m, 5, &s.name);
        key(m, 6, VARINT);
        varint(m, s.kind as u64);
        fixed64(m, 7, s.start_ns);
        fixed64(m, 8, s.end_ns.max(s.start_ns));
        for a in &s.attributes {
            attribute(m, 9, a);
        }
        for e in &s.events {
            event(m, e);
        }
        if let Some(error) = &s.error {
            message(m, 15, |status| {
                string(status, 2, error);
                key(status, 3, VARINT);
                varint(status, 2);
            });
        }
    });
}

/// The request body: one resource (`service.name` huddle and its version), one scope, the spans.
pub fn encode(spans: &[Span]) -> Vec<u8> {
    let mut out = Vec::new();
    message(&mut out, 1, |rs| {
        message(rs, 1, |resource| {
            attribute(resource, 1, &("service.name".into(), Value::Str("huddle".into())));
            attribute(
                resource,
                1,
                &(
                    "service.version".into(),
                    Value::Str(env!("CARGO_PKG_VERSION").into()),
                ),
            );
        });
        message(rs, 2, |scope_spans| {
            message(scope_spans, 1, |scope| {
                string(scope, 1, "huddle");
                string(scope, 2, env!("CARGO_PKG_VERSION"));
            });
            for s in spans {
                span(scope_spans, s);
            }
        });
    });
    out
}

/// The same request in OTLP/JSON (the protobuf JSON mapping with OTLP's exceptions: ids as
/// lower-case hex, enums as integers; 64-bit integers as decimal strings).
pub fn encode_json(spans: &[Span]) -> Vec<u8> {
    let version = env!("CARGO_PKG_VERSION");
    let body = json!({
        "resourceSpans": [{
            "resource": {"attributes": [
                json_attribute(&("service.name".into(), Value::Str("huddle".into()))),
                json_attribute(&("service.version".into(), Value::Str(version.into()))),
            ]},
            "scopeSpans": [{
                "scope": {"name": "huddle", "version": version},
                "spans": spans.iter().map(json_span).collect::<Vec<_>>(),
            }],
        }],
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn json_value(v: &Value) -> serde_json::Value {
    match v {
        Value::Str(s) => json!({"stringValue": s}),
        Value::Bool(b) => json!({"boolValue": b}),
        Value::Int(i) => json!({"intValue": i.to_string()}),
        Value::Double(d) => json!({"doubleValue": d}),
        Value::Strs(list) => json!({"arrayValue": {
            "values": list.iter().map(|s| json!({"stringValue": s})).collect::<Vec<_>>()
        }}),
    }
}

fn json_attribute(a: &Attr) -> serde_json::Value {
    json!({"key": a.0, "value": json_value(&a.1)})
}

fn json_attributes(attributes: &[Attr]) -> Vec<serde_json::Value> {
    attributes.iter().map(json_attribute).collect()
}

fn json_span(s: &Span) -> serde_json::Value {
    let mut span = json!({
        "traceId": hex(&s.trace_id),
        "spanId": hex(&s.span_id),
        "name": s.name,
        "kind": s.kind as u64,
        "startTimeUnixNano": s.start_ns.to_string(),
        "endTimeUnixNano": s.end_ns.max(s.start_ns).to_string(),
        "attributes": json_attributes(&s.attributes),
        "events": s.events.iter().map(|e| json!({
            "timeUnixNano": e.time_ns.to_string(),
            "name": e.name,
            "attributes": json_attributes(&e.attributes),
        })).collect::<Vec<_>>(),
    });
    if let Some(parent) = &s.parent {
        span["parentSpanId"] = json!(hex(parent));
    }
    if let Some(error) = &s.error {
        span["status"] = json!({"message": error, "code": 2});
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_negative_ints_take_their_protobuf_sizes() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        let mut out = Vec::new();
        any_value(&mut out, &Value::Int(-1));
        assert_eq!(out.len(), 1 + 10);
        let mut out = Vec::new();
        any_value(&mut out, &Value::Str("ab".into()));
        assert_eq!(out, [0x0a, 2, b'a', b'b']);
    }

    #[test]
    fn the_json_form_has_hex_ids_numeric_enums_and_int64_as_strings() {
        let span = Span {
            trace_id: [0xab; 16],
            span_id: [1, 2, 3, 4, 5, 6, 7, 8],
            parent: Some([0x0f; 8]),
            name: "chat m".into(),
            kind: super::super::spans::Kind::Client,
            start_ns: 10,
            end_ns: 5,
            attributes: vec![
                ("n".into(), Value::Int(-3)),
                ("tools".into(), Value::Strs(vec!["a".into()])),
            ],
            events: vec![SpanEvent {
                time_ns: 7,
                name: "e".into(),
                attributes: vec![("score".into(), Value::Double(0.5))],
            }],
            error: Some("boom".into()),
        };
        let body: serde_json::Value = serde_json::from_slice(&encode_json(&[span])).expect("json");
        let scope = &body["resourceSpans"][0]["scopeSpans"][0];
        assert_eq!(scope["scope"]["name"], "huddle");
        let s = &scope["spans"][0];
        assert_eq!(s["traceId"], "ab".repeat(16));
        assert_eq!(s["spanId"], "0102030405060708");
        assert_eq!(s["parentSpanId"], "0f".repeat(8));
        assert_eq!(s["kind"], 3);
        assert_eq!(s["startTimeUnixNano"], "10");
        assert_eq!(s["endTimeUnixNano"], "10", "never before its start");
        assert_eq!(
            s["attributes"][0],
            json!({"key": "n", "value": {"intValue": "-3"}})
        );
        assert_eq!(
            s["attributes"][1]["value"]["arrayValue"]["values"][0]["stringValue"],
            "a"
        );
        assert_eq!(s["events"][0]["attributes"][0]["value"]["doubleValue"], 0.5);
        assert_eq!(s["status"], json!({"message": "boom", "code": 2}));
    }
}
