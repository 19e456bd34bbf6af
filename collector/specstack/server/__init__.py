"""The vLLM server under test: start it natively or attach to one (runtime), check its arguments with vLLM's
own parser before it starts (preflight), check the model folders it will load (model_checks), and record
exactly what ran (provenance)."""
