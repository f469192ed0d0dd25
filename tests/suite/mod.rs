mod fake_llm_server;
mod providers_command;
mod providers_http;
mod providers_litellm;
mod providers_llmock;
