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

// liveEngine, set by a llama.cpp build (agent_live.go), is the live engine
// on the GGUF at path; without it commands measure only on a device agent.
var liveEngine func(path string, o liveOptions) (agent.Engine, error)

// liveOptions tune the live engine (agent.LiveEngine's fields): calibrated
// is handed the writer of a calibration's summary.
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

// tokenEnv holds the agent token for lessim agent and its clients.
const tokenEnv = "LESSIM_AGENT_TOKEN"

// errTokenAlone refuses --token without --target.
var errTokenAlone = errors.New("--token applies only with --target")

// remoteWhy is why a flag of this machine's run is refused with --target.
const remoteWhy = "with --target: the agent runs its own model and engine settings"

// targetForms are the forms of --target.
const targetForms = "tcp://HOST:PORT, usb://UDID:PORT or adb://SERIAL:PORT"

// targetFlags are --target and --token: the device agent that measures.
type targetFlags struct{ target, token string }

func (t *targetFlags) add(fl *pflag.FlagSet, usage string) {
	fl.StringVar(&t.target, "target", "", usage)
	fl.StringVar(&t.token, "token", "", "the agent's token with --target (default $"+tokenEnv+")")
}

// check checks --target's form and returns its token (clientToken).
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

// open opens a client of the agent at --target, else the live engine here
// on model (errNoLlama: what cannot be done without it, and what instead).
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

func closeEngine(eng agent.Engine) {
	if c, ok := eng.(*agent.Client); ok {
		c.Close()
	}
}

// clientToken is --token, else $LESSIM_AGENT_TOKEN, refused unless it has
// a token's form (the agent's refusal would read as its fault).
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
