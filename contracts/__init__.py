"""The serverlab HTTP contract: calendar, test vectors and conformance checker."""
