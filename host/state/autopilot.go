package state

// SetAutopilotConfig writes the autopilot configuration, keeping the
// first one's create index.
func (t *Txn) SetAutopilotConfig(c *AutopilotConfig) error {
	c.Key = AutopilotConfigKey
	if !t.restore {
		c.CreateIndex = t.index
		if old := t.AutopilotConfig(); old != nil {
			c.CreateIndex = old.CreateIndex
		}
		c.ModifyIndex = t.index
	}
	return t.insert(TableAutopilot, c)
}

// AutopilotConfig returns the autopilot configuration an operator wrote,
// nil if none was.
func (r reader) AutopilotConfig() *AutopilotConfig {
	return first[AutopilotConfig](r, TableAutopilot, "id", AutopilotConfigKey)
}
