package main

import (
	"testing"

	"github.com/gin-gonic/gin"

	"serverlab/contract/contracttest"
)

func TestContract(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	r, err := newRouter(contracttest.Service(t, displayName))
	if err != nil {
		t.Fatal(err)
	}
	contracttest.Run(t, r, displayName)
}
