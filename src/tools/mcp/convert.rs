//! MCP's shapes to huddle's: a listed tool to a [`ToolSpec`], a call's result to the text a
//! model gets back.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, Tool};

use crate::model::ToolSpec;
use crate::tools::ToolOutput;

/// A listed tool as a model sees it (the name without the server prefix).
pub fn spec(tool: Tool) -> ToolSpec {
    let description = tool
        .description
        .map(|d| d.into_owned())
        .or(tool.title)
        .unwrap_or_default();
    ToolSpec {
        name: tool.name.into_owned(),
        description,
        input_schema: serde_json::Value::Object((*tool.input_schema).clone()),
    }
}

/// A call's result as text: the text blocks joined by newlines, every other block described in
/// a line (`[image/png, 1234 bytes]`, a resource's URI); the structured content (as JSON) when
/// no block carries text. The tool's own `isError` is passed through.
pub fn output(result: CallToolResult) -> ToolOutput {
    let mut parts = Vec::with_capacity(result.content.len());
    let mut has_text = false;
    for block in &result.content {
        let part = match block {
            ContentBlock::Text(t) => {
                has_text = true;
                t.text.clone()
            }
            ContentBlock::Image(i) => binary("image", &i.mime_type, &i.data),
            ContentBlock::Audio(a) => binary("audio", &a.mime_type, &a.data),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    has_text = true;
                    format!("[resource {uri}]\n{text}")
                }
                ResourceContents::BlobResourceContents {
                    uri, mime_type, blob, ..
                } => format!(
                    "[resource {uri}, {}, {} bytes]",
                    mime_type.as_deref().unwrap_or("binary"),
                    base64_len(blob)
                ),
                _ => "[a resource of a kind huddle does not show]".to_string(),
            },
            ContentBlock::ResourceLink(link) => format!("[resource link {}]", link.uri),
            _ => "[content of a kind huddle does not show]".to_string(),
        };
        parts.push(part);
    }
    if !has_text && let Some(structured) = &result.structured_content {
        let json = serde_json::to_string_pretty(structured).unwrap_or_else(|_| structured.to_string());
        parts.insert(0, json);
    }
    ToolOutput {
        text: parts.join("\n"),
        is_error: result.is_error.unwrap_or(false),
    }
}

/// `[image/png, 1234 bytes]`; a block without a MIME type says what kind it is.
fn binary(kind: &str, mime_type: &str, data: &str) -> String {
    let kind = if mime_type.is_empty() { kind } else { mime_type };
    format!("[{kind}, {} bytes]", base64_len(data))
}

/// Bytes encoded by base64 text `data` (padding and whitespace aside).
fn base64_len(data: &str) -> usize {
    let symbols = data
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count();
    symbols * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::EmbeddedResource;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_blocks_are_joined_and_other_blocks_described() {
        let out = output(result(json!({
            "content": [
                {"type": "text", "text": "first"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///x.txt", "name": "x"},
                {"type": "resource", "resource": {"uri": "mem://blob", "blob": "AAECAw==", "mimeType": "application/octet-stream"}},
                {"type": "resource", "resource": {"uri": "mem://notes", "text": "embedded text"}},
                {"type": "text", "text": "last"}
            ],
            "structuredContent": {"ignored": true}
        })));
        assert_eq!(
            out.text,
            "first\n[image/png, 8 bytes]\n[audio/wav, 3 bytes]\n[resource link file:///x.txt]\n[resource mem://blob, application/octet-stream, 4 bytes]\n[resource mem://notes]\nembedded text\nlast"
        );
        assert!(!out.is_error);
    }

    #[test]
    fn structured_content_stands_in_for_missing_text() {
        let out = output(result(json!({
            "content": [{"type": "image", "data": "AAAA", "mimeType": ""}],
            "structuredContent": {"ok": 1},
            "isError": true
        })));
        assert_eq!(out.text, "{\n  \"ok\": 1\n}\n[image, 3 bytes]");
        assert!(out.is_error);
        let empty = output(result(json!({"content": []})));
        assert_eq!(
            empty,
            ToolOutput {
                text: String::new(),
                is_error: false
            }
        );
    }

    #[test]
    fn a_built_result_converts_like_a_parsed_one() {
        let mut r = CallToolResult::success(vec![ContentBlock::Resource(EmbeddedResource::new(
            ResourceContents::text("hello", "mem://a"),
        ))]);
        r.is_error = None;
        assert_eq!(output(r).text, "[resource mem://a]\nhello");
    }

    #[test]
    fn specs_keep_the_schema_and_fall_back_to_the_title() {
        let tool: Tool = serde_json::from_value(json!({
            "name": "git_status",
            "title": "Status",
            "inputSchema": {"type": "object", "properties": {"repo_path": {"type": "string"}}, "required": ["repo_path"]}
        }))
        .unwrap();
        let s = spec(tool);
        assert_eq!(s.name, "git_status");
        assert_eq!(s.description, "Status");
        assert_eq!(s.input_schema["required"], json!(["repo_path"]));
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(base64_len(""), 0);
        assert_eq!(base64_len("QQ=="), 1);
        assert_eq!(base64_len("QUI="), 2);
        assert_eq!(base64_len("QUJD"), 3);
        assert_eq!(base64_len("QUJD\nREVG"), 6);
    }
}
