package main

import (
	"testing"

	"serverlab/contract/contracttest"
)

func TestDisplayNameMatchesManifest(t *testing.T) {
	if got := contracttest.ManifestDisplayName(t); got != displayName {
		t.Errorf("server.toml display_name %q, code %q", got, displayName)
	}
}

func TestContract(t *testing.T) {
	svc := contracttest.Service(t, displayName)
	contracttest.Run(t, newHandler(svc), displayName)
}
