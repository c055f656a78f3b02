"""The concurrency sweep: batched diffusion vs one request at a time vs autoregressive decoding."""
