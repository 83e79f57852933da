package contract_test

import (
	"testing"
	"time"

	"serverlab/contract/contracttest"
)

func BenchmarkWorkday(b *testing.B) {
	svc := contracttest.Service(b, "Test")
	b.Run("at", func(b *testing.B) {
		for b.Loop() {
			svc.Workday("at=2019-09-30T15:00:01", time.Time{})
		}
	})
	b.Run("now", func(b *testing.B) {
		for b.Loop() {
			svc.Workday("", time.Now())
		}
	})
}

func BenchmarkRoot(b *testing.B) {
	svc := contracttest.Service(b, "Test")
	b.Run("hello", func(b *testing.B) {
		for b.Loop() {
			svc.Root("", time.Now())
		}
	})
	b.Run("n=100", func(b *testing.B) {
		for b.Loop() {
			svc.Root("n=100", time.Time{})
		}
	})
}
