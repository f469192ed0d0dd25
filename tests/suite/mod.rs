mod presets_catalog;
mod squad_corpus;
mod squad_malformed;
mod squad_roundtrip;
mod store_crash;
