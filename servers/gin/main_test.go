package main

import (
	"testing"

	"github.com/gin-gonic/gin"

	"serverlab/contract/contracttest"
)

func TestDisplayNameMatchesManifest(t *testing.T) {
	if got := contracttest.ManifestDisplayName(t); got != displayName {
		t.Errorf("server.toml display_name %q, code %q", got, displayName)
	}
}

func TestContract(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	r, err := newRouter(contracttest.Service(t, displayName))
	if err != nil {
		t.Fatal(err)
	}
	contracttest.Run(t, r, displayName)
}
