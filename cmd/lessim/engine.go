package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/devices"
)

// The engines a command measures with: the live engine in this process (a
// llama.cpp build) or a device agent's, at --target.

// liveEngine, when set by a build with the llama.cpp runtime (a
// llamacpp-tagged file's init), is the live engine on the GGUF at path;
// otherwise the agent serves the simulator, and live, calibrate and
// validate measure only on a device agent.
var liveEngine func(path string, o liveOptions) (agent.Engine, error)

// liveOptions tune the live engine: whether it serves this process (local:
// live, calibrate, validate) or an agent's clients, its I/O lanes (0 =
// live's default), the prompt its records prefill ("" = its default),
// where a calibration's progress goes (log) and who is handed the writer of
// a calibration's summary (calibrated).
type liveOptions struct {
	local      bool
	lanes      int
	prompt     string
	log        io.Writer
	calibrated func(summary func(io.Writer, *devices.Device))
}

// errNoLlama is why a build without liveEngine cannot measure here.
func errNoLlama(what, remote string) error {
	return fmt.Errorf("this lessim was built without llama.cpp: build it with `make build` (go build -tags llamacpp with CGO_CPPFLAGS from the Makefile) to %s, %s", what, remote)
}

// tokenEnv holds an agent token for `lessim agent` (instead of a fresh one)
// and for clients (instead of --token).
const tokenEnv = "LESSIM_AGENT_TOKEN"

// errTokenAlone refuses --token without --target.
var errTokenAlone = errors.New("--token applies only with --target")

// remoteWhy is why a flag of this machine's run is refused with --target.
const remoteWhy = "with --target: the agent runs its own model and engine settings"

// targetForms are the forms of --target.
const targetForms = "tcp://HOST:PORT, usb://UDID:PORT or adb://SERIAL:PORT"

// targetFlags are --target and --token: the device agent that measures.
type targetFlags struct{ target, token string }

// add defines the flags; usage is --target's.
func (t *targetFlags) add(fl *pflag.FlagSet, usage string) {
	fl.StringVar(&t.target, "target", "", usage)
	fl.StringVar(&t.token, "token", "", "the agent's token with --target (default $"+tokenEnv+")")
}

// check checks --target's form and returns its token (clientToken);
// without --target it refuses --token.
func (t *targetFlags) check() (string, error) {
	if t.target == "" {
		if t.token != "" {
			return "", errTokenAlone
		}
		return "", nil
	}
	if _, err := agent.ParseTarget(t.target); err != nil {
		return "", err
	}
	return clientToken(t.token)
}

// open opens the engine: a client of the agent at --target (with token),
// else the live engine in this process on model (what a build without it
// cannot do, and what it can instead: errNoLlama).
func (t *targetFlags) open(ctx context.Context, token, model string, o liveOptions, what, instead string) (agent.Engine, error) {
	if t.target != "" {
		return agent.Dial(ctx, t.target, token)
	}
	if liveEngine == nil {
		return nil, errNoLlama(what, instead)
	}
	o.local = true
	return liveEngine(model, o)
}

// closeEngine closes eng when it is an agent's client.
func closeEngine(eng agent.Engine) {
	if c, ok := eng.(*agent.Client); ok {
		c.Close()
	}
}

// clientToken is --token, else $LESSIM_AGENT_TOKEN, refused unless it has
// a token's form: a typo must not reach the agent, whose refusal would read
// as the agent's fault (agent check: "does not conform").
func clientToken(flag string) (string, error) {
	from := "--token"
	if flag == "" {
		flag, from = os.Getenv(tokenEnv), "$"+tokenEnv
	}
	switch {
	case flag == "":
		return "", fmt.Errorf("no token: pass --token (the agent prints it at start) or set $%s", tokenEnv)
	case !agent.ValidToken(flag):
		return "", fmt.Errorf("%s %q: not an agent token (32 hex characters, as the agent prints it at start)", from, flag)
	}
	return flag, nil
}
