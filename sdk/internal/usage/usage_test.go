package usage

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func TestCache(t *testing.T) {
	res := func(cpu, mem int64) *sdk.AllocatedResources {
		return &sdk.AllocatedResources{Tasks: map[string]*sdk.AllocatedTaskResources{
			"t": {Cpu: sdk.AllocatedCpuResources{CpuShares: cpu}, Memory: sdk.AllocatedMemoryResources{MemoryMB: mem}}},
			Shared: sdk.AllocatedSharedResources{DiskMB: 10}}
	}
	small, large := res(100, 64), res(500, 256)
	var c Cache
	for i, tt := range []struct {
		res  *sdk.AllocatedResources
		want sdk.Usage
	}{
		{small, sdk.Usage{CPU: 100, MemoryMB: 64, DiskMB: 10}},
		{small, sdk.Usage{CPU: 100, MemoryMB: 64, DiskMB: 10}},
		{large, sdk.Usage{CPU: 500, MemoryMB: 256, DiskMB: 10}},
		{nil, sdk.Usage{}},
		{small, sdk.Usage{CPU: 100, MemoryMB: 64, DiskMB: 10}},
		{res(100, 64), sdk.Usage{CPU: 100, MemoryMB: 64, DiskMB: 10}},
	} {
		if got := c.Of(&sdk.Allocation{AllocatedResources: tt.res}); got != tt.want {
			t.Errorf("%d: usage %+v, want %+v", i, got, tt.want)
		}
	}
}
