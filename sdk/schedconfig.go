package sdk

// SchedulerConfiguration is the operator's cluster-wide scheduler settings.
type SchedulerConfiguration struct {
	SchedulerAlgorithm            string `msg:",omitempty"`
	PreemptionConfig              PreemptionConfig
	MemoryOversubscriptionEnabled bool `msg:",omitempty"`
	RejectJobRegistration         bool `msg:",omitempty"`
	PauseEvalBroker               bool `msg:",omitempty"`
	// NodeLimitForFeasibilityChecks is how many feasible nodes a placement
	// whose group has affinities or spreads ranks (at least its count; 0:
	// 100), as in Nomad: fewer is faster and more random, more applies
	// them more exactly.
	NodeLimitForFeasibilityChecks uint   `msg:",omitempty"`
	CreateIndex                   uint64 `msg:",omitempty"`
	ModifyIndex                   uint64 `msg:",omitempty"`
}

// PreemptionConfig enables preemption per scheduler type.
type PreemptionConfig struct {
	SystemSchedulerEnabled   bool `msg:",omitempty"`
	SysBatchSchedulerEnabled bool `msg:",omitempty"`
	BatchSchedulerEnabled    bool `msg:",omitempty"`
	ServiceSchedulerEnabled  bool `msg:",omitempty"`
}

// DefaultSchedulerConfiguration is Nomad's default: binpack, preemption for
// system jobs only.
func DefaultSchedulerConfiguration() *SchedulerConfiguration {
	return &SchedulerConfiguration{
		SchedulerAlgorithm: SchedulerAlgorithmBinpack,
		PreemptionConfig:   PreemptionConfig{SystemSchedulerEnabled: true},
	}
}

// EffectiveAlgorithm returns the configured algorithm, binpack by default.
func (c *SchedulerConfiguration) EffectiveAlgorithm() string {
	if c == nil || c.SchedulerAlgorithm == "" {
		return SchedulerAlgorithmBinpack
	}
	return c.SchedulerAlgorithm
}

// PreemptionEnabled reports whether preemption is on for a scheduler type.
func (c *SchedulerConfiguration) PreemptionEnabled(jobType string) bool {
	if c == nil {
		return jobType == JobTypeSystem
	}
	switch jobType {
	case JobTypeSystem:
		return c.PreemptionConfig.SystemSchedulerEnabled
	case JobTypeSysBatch:
		return c.PreemptionConfig.SysBatchSchedulerEnabled
	case JobTypeBatch:
		return c.PreemptionConfig.BatchSchedulerEnabled
	case JobTypeService:
		return c.PreemptionConfig.ServiceSchedulerEnabled
	}
	return false
}
