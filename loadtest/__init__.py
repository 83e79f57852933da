"""serverlab's harness: build, verify, load and report on every stack."""
