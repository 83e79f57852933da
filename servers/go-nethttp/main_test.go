package main

import (
	"testing"

	"serverlab/contract/contracttest"
)

func TestContract(t *testing.T) {
	svc := contracttest.Service(t, displayName)
	contracttest.Run(t, newHandler(svc), displayName)
}
