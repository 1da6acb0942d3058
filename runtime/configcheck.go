package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover-sched/drover/sdk/abi"
)

// ConfigChecker is implemented by factories whose plugins can be asked
// whether they accept a configuration (ABI 1.7). Call it through
// CheckConfig, which asks only plugins that declare 1.7 or later.
type ConfigChecker interface {
	// CheckConfig sends one encoded abi.ConfigRequest to an instance of
	// its own, which it closes afterwards, and returns the encoded
	// abi.Status. The instance runs under ctx's deadline and the plugin's
	// memory limit, as an eval does. An error means the plugin did not
	// answer: it trapped, crashed, overran ctx or its memory limit; or,
	// as ErrConfigCheckNotServed, that the plugin serves no check (a
	// module without the export, a process without the method).
	CheckConfig(ctx context.Context, req []byte) ([]byte, error)
}

// ErrConfigCheckNotServed is what a ConfigChecker returns for a plugin
// that declares ABI 1.7 but serves no configuration check (one written
// without the Go SDK need not): it accepts any configuration, unasked.
var ErrConfigCheckNotServed = errors.New("runtime: the plugin serves no configuration check")

// CheckConfig asks the plugin f loads whether it accepts config, the
// configuration every eval will hand it, as a host does before it runs
// the plugin: nil if it does, an error wrapping ErrConfigRefused with the
// plugin's reason if it refuses, and one wrapping ErrPluginFailed if the
// check itself failed (a panic, a trap, a crash, ctx's deadline, the
// memory limit). asked is false, with a nil error, when the plugin was
// not asked: one that declares an ABI older than 1.7 has no way to
// answer, and accepts any configuration, as does a plugin whose factory
// cannot ask (not a ConfigChecker) and one that serves no check.
func CheckConfig(ctx context.Context, f Factory, config map[string]string) (asked bool, err error) {
	info := f.Info()
	c, ok := f.(ConfigChecker)
	if !ok || !abi.Version(info.ABI).ChecksConfig() {
		return false, nil
	}
	req, err := (&abi.ConfigRequest{Config: config}).MarshalMsg(nil)
	if err != nil {
		return false, fmt.Errorf("runtime: encode config request: %w", err)
	}
	out, err := c.CheckConfig(ctx, req)
	if errors.Is(err, ErrConfigCheckNotServed) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("%w: plugin[%s]: checking its configuration: %v", ErrPluginFailed, info.Name, err)
	}
	var st abi.Status
	if err := abi.Decode(out, &st); err != nil {
		return true, fmt.Errorf("%w: plugin[%s]: checking its configuration: %v", ErrPluginFailed, info.Name, err)
	}
	switch st.Code {
	case abi.CodeOK:
		return true, nil
	case abi.CodeConfigRefused:
		if st.Message == "" {
			st.Message = "no reason given"
		}
		return true, fmt.Errorf("%w: plugin[%s]: %s", ErrConfigRefused, info.Name, quoted(st.Message))
	}
	return true, fmt.Errorf("%w: plugin[%s]: checking its configuration: %w", ErrPluginFailed, info.Name, abi.Err(st.Code, quoted(st.Message)))
}
