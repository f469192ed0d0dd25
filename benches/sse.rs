//! SSE parsing throughput: a realistic multi-MB streamed answer (OpenAI chunks with
//! `usage:null`, Anthropic events with pings) fed in 16 KiB reads through the incremental
//! parser and the protocol decoder, as the providers do.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use huddle::providers::anthropic::AnthropicDecoder;
use huddle::providers::openai::OpenAiDecoder;
use huddle::providers::sse::SseParser;

/// huddle's own allocator (the binary's), so the figures are what `huddle` does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CHUNKS: usize = 20_000;
const READ: usize = 16 * 1024;

fn words(i: usize) -> String {
    let w = [
        "streamed ",
        "tokens ",
        "arrive ",
        "in ",
        "small ",
        "pieces, ",
        "\u{e9}t\u{e9} ",
        "\u{1F600} ",
    ];
    format!("{}{}", w[i % w.len()], w[(i * 7) % w.len()])
}

fn openai_stream() -> Vec<u8> {
    let mut s = String::new();
    for i in 0..CHUNKS {
        let delta = serde_json::json!({"content": words(i)});
        s.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-1e516dcb8a2e43f3801716de\",\"object\":\"chat.completion.chunk\",\"created\":1795265006,\"model\":\"gpt-4o-mini\",\"system_fingerprint\":null,\"choices\":[{{\"index\":0,\"delta\":{delta},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null}}\n\n"
        ));
    }
    s.push_str(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    );
    s.into_bytes()
}

fn anthropic_stream() -> Vec<u8> {
    let mut s = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
    );
    for i in 0..CHUNKS {
        if i % 50 == 0 {
            s.push_str("event: ping\ndata: {\"type\": \"ping\"}\n\n");
        }
        let d = serde_json::json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":words(i)}});
        s.push_str(&format!("event: content_block_delta\r\ndata: {d}\r\n\r\n"));
    }
    s.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    s.into_bytes()
}

fn parse_openai(bytes: &[u8]) -> usize {
    let mut parser = SseParser::new();
    let mut decoder = OpenAiDecoder::new();
    let mut text_len = 0;
    for piece in bytes.chunks(READ) {
        parser.push(piece);
        while let Some(ev) = parser.next_event() {
            if decoder.handle(&ev, &mut |t| text_len += t.len()).is_err() {
                return 0;
            }
        }
    }
    assert!(decoder.is_done());
    text_len
}

fn parse_anthropic(bytes: &[u8]) -> usize {
    let mut parser = SseParser::new();
    let mut decoder = AnthropicDecoder::new();
    let mut text_len = 0;
    for piece in bytes.chunks(READ) {
        parser.push(piece);
        while let Some(ev) = parser.next_event() {
            if decoder.handle(&ev, &mut |t| text_len += t.len()).is_err() {
                return 0;
            }
        }
    }
    assert!(decoder.is_complete());
    text_len
}

fn framing_only(bytes: &[u8]) -> usize {
    let mut parser = SseParser::new();
    let mut n = 0;
    for piece in bytes.chunks(READ) {
        parser.push(piece);
        while let Some(ev) = parser.next_event() {
            n += ev.data.len();
        }
    }
    n
}

fn bench(c: &mut Criterion) {
    let openai = openai_stream();
    let anthropic = anthropic_stream();
    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Bytes(openai.len() as u64));
    group.bench_function(format!("openai_{:.1}MB", openai.len() as f64 / 1e6), |b| {
        b.iter(|| parse_openai(std::hint::black_box(&openai)))
    });
    group.bench_function(format!("framing_only_{:.1}MB", openai.len() as f64 / 1e6), |b| {
        b.iter(|| framing_only(std::hint::black_box(&openai)))
    });
    group.throughput(Throughput::Bytes(anthropic.len() as u64));
    group.bench_function(format!("anthropic_{:.1}MB", anthropic.len() as f64 / 1e6), |b| {
        b.iter(|| parse_anthropic(std::hint::black_box(&anthropic)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
