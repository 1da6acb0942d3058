package sdk

import "testing"

func TestUsageCache(t *testing.T) {
	res := func(cpu, mem int64) *AllocatedResources {
		return &AllocatedResources{Tasks: map[string]*AllocatedTaskResources{
			"t": {Cpu: AllocatedCpuResources{CpuShares: cpu}, Memory: AllocatedMemoryResources{MemoryMB: mem}}},
			Shared: AllocatedSharedResources{DiskMB: 10}}
	}
	small, large := res(100, 64), res(500, 256)
	var c UsageCache
	for i, tt := range []struct {
		res  *AllocatedResources
		want Usage
	}{
		{small, Usage{CPU: 100, MemoryMB: 64, DiskMB: 10}},
		{small, Usage{CPU: 100, MemoryMB: 64, DiskMB: 10}},
		{large, Usage{CPU: 500, MemoryMB: 256, DiskMB: 10}},
		{nil, Usage{}},
		{small, Usage{CPU: 100, MemoryMB: 64, DiskMB: 10}},
		{res(100, 64), Usage{CPU: 100, MemoryMB: 64, DiskMB: 10}},
	} {
		if got := c.Of(&Allocation{AllocatedResources: tt.res}); got != tt.want {
			t.Errorf("%d: usage %+v, want %+v", i, got, tt.want)
		}
	}
}
