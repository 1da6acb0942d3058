package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

func TestCheckResources_UnderReportedClaimsAreRefused(t *testing.T) {
	tg := &sdk.TaskGroup{Name: "g", EphemeralDisk: &sdk.EphemeralDisk{SizeMB: 300},
		Tasks: []*sdk.Task{{Name: "t", Resources: &sdk.Resources{CPU: 500, MemoryMB: 256}}}}
	full := sdk.RequestedResources(tg)
	if err := checkResources(&sdk.Allocation{ID: "a", AllocatedResources: full}, tg); err != nil {
		t.Fatalf("what the group asks for is refused: %v", err)
	}
	for dim, cut := range map[string]func(*sdk.AllocatedResources){
		"cpu":    func(r *sdk.AllocatedResources) { r.Tasks["t"].Cpu.CpuShares = 499 },
		"memory": func(r *sdk.AllocatedResources) { r.Tasks["t"].Memory.MemoryMB = 1 },
		"disk":   func(r *sdk.AllocatedResources) { r.Shared.DiskMB = 0 },
	} {
		r := sdk.RequestedResources(tg)
		cut(r)
		err := checkResources(&sdk.Allocation{ID: "a", AllocatedResources: r}, tg)
		if !errors.Is(err, sdk.ErrPlanInvalid) || !strings.Contains(err.Error(), dim) {
			t.Errorf("%s under-reported: err = %v", dim, err)
		}
	}
}
