package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lessim/lessim/agent"
	"github.com/lessim/lessim/devices"
	"github.com/lessim/lessim/experiment"
	"github.com/lessim/lessim/runtime/live"
)

type agentFlags struct {
	listen, device, deviceFile, model string
	allowRemote                       bool
	playback                          float64
	lanes                             int
}

func newAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Serve runs to lessim clients over the device-agent protocol (or check an agent)",
		Long: `agent serves this machine's engine over the device-agent protocol
(docs/agent-protocol.md: HTTP, JSON, newline-delimited JSON streams) until
interrupted. It prints the address and a fresh 128-bit token (or uses
$` + tokenEnv + `); every request must carry it (Authorization: Bearer TOKEN).
It listens on loopback unless --allow-remote.

A run's spec is an experiment spec (docs/experiment-spec.md) on the agent's
own device with a synthetic trace. With a built-in --model (or none) the
engine is lessim's simulator: a run simulates the spec on the --device
profile, streams one measurement per decode pass (paced by --playback) and
returns the same Result as 'lessim simulate'. With --model FILE.gguf (a
llama.cpp build) the engine is the live engine: a run decodes the model with
the spec's policy and cache and streams each token's measurement.`,
		Example: `  lessim agent --listen 127.0.0.1:7070 --model qwen3-30b-a3b
  lessim agent check tcp://127.0.0.1:7070 --token 0123…`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serveAgent(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:7070", "HOST:PORT to listen on (port 0 picks a free one)")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow a non-loopback --listen address (anyone on the network with the token may run)")
	fl.StringVar(&f.device, "device", experiment.DefaultDevice, "embedded device profile the simulator engine simulates (see: lessim devices list)")
	fl.StringVar(&f.deviceFile, "device-file", "", "device profile YAML the simulator engine simulates (instead of --device)")
	fl.StringVar(&f.model, "model", "", "model to load at start: FILE.gguf for the live engine (llama.cpp builds), or a built-in model spec for the simulator (NAME or NAME:VARIANT)")
	floatVar(fl, &f.playback, "playback", 1, "pace the stream: simulated time ÷ this (1 = the device's speed; 0 = as fast as possible)")
	intVar(fl, &f.lanes, "lanes", 0, "the live engine's I/O lanes (with --model FILE.gguf; 0 = live's default, 2): the profile's flash.lanes for validate --target")
	cmd.AddCommand(newAgentCheckCmd())
	return cmd
}

func serveAgent(cmd *cobra.Command, f *agentFlags) error {
	if err := checkAgentFlags(cmd, f); err != nil {
		return err
	}
	token := os.Getenv(tokenEnv)
	if token == "" {
		var err error
		if token, err = agent.NewToken(); err != nil {
			return err
		}
	} else if !agent.ValidToken(token) {
		return fmt.Errorf("$%s: a token is 32 hex characters", tokenEnv)
	}
	releaseSignals() // the agent shuts down itself on SIGINT/SIGTERM; it writes no files
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // a second signal ends the process at once (the default action)
	eng, err := agentEngine(ctx, f)
	if err != nil {
		return err
	}
	ln, err := agent.Listen(f.listen, f.allowRemote)
	if err != nil {
		return err
	}
	srv := &agent.Server{Engine: eng, Token: token, Agent: "lessim " + version, Log: cmd.ErrOrStderr()}
	facts := eng.Facts()
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "lessim agent: serving %s %s (%s) on tcp://%s\n", facts.Engine, facts.EngineVersion, facts.Kind+" "+facts.Model, ln.Addr())
	fmt.Fprintf(out, "token: %s\n", token)
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	st := srv.Stats()
	fmt.Fprintf(cmd.ErrOrStderr(), "lessim agent: stopped after %d connections, %d requests (%d completed, %d cancelled, %d failed)\n",
		st.Connections, st.Requests, st.Completed, st.Cancelled, st.Failed)
	return nil
}

// checkAgentFlags refuses flags out of range and flags the engine would
// ignore: --playback paces the simulator only, and the live engine
// measures this machine, not a --device profile.
func checkAgentFlags(cmd *cobra.Command, f *agentFlags) error {
	if math.IsNaN(f.playback) || math.IsInf(f.playback, 0) || f.playback < 0 {
		return fmt.Errorf("--playback %g: must be a finite number >= 0", f.playback)
	}
	if !strings.HasSuffix(f.model, ".gguf") {
		if cmd.Flags().Changed("device") && cmd.Flags().Changed("device-file") {
			return errors.New("--device-file does not apply: --device and --device-file exclude each other")
		}
		if f.model != "" {
			name, variant, _ := strings.Cut(f.model, ":")
			if _, err := devices.LookupModel(name, variant); err != nil {
				if devices.ModelVariants(name) == nil {
					return fmt.Errorf("--model %s: %w, or a FILE.gguf for the live engine", f.model, err)
				}
				return fmt.Errorf("--model %s: %w", f.model, err)
			}
		}
		return refuseFlags(cmd, []string{"lanes"}, "without --model FILE.gguf: the simulator engine reads with its profile's flash.lanes")
	}
	if f.lanes != 0 {
		if err := live.CheckLanes(f.lanes); err != nil {
			return fmt.Errorf("--%w", err)
		}
	}
	return refuseFlags(cmd, []string{"playback", "device", "device-file"},
		fmt.Sprintf("with --model %s: the live engine decodes the model on this machine (it paces nothing and measures this machine, not a profile)", f.model))
}

// agentEngine is the engine to serve: the live engine for a GGUF --model
// (when built in), else the simulator of --device with --model loaded.
func agentEngine(ctx context.Context, f *agentFlags) (agent.Engine, error) {
	if strings.HasSuffix(f.model, ".gguf") {
		if liveEngine == nil {
			return nil, fmt.Errorf("--model %s: serving a GGUF needs the live engine, which this build does not have; without it the agent serves the simulator (pass a built-in model, see `lessim models list`)", f.model)
		}
		return liveEngine(f.model, liveOptions{lanes: f.lanes})
	}
	p, err := loadProfile(f.device, f.deviceFile)
	if err != nil {
		return nil, err
	}
	eng, err := agent.NewSimEngine(p, version)
	if err != nil {
		return nil, err
	}
	eng.Playback = f.playback
	if f.model != "" {
		if _, err := eng.LoadModel(ctx, f.model); err != nil {
			return nil, err
		}
	}
	return eng, nil
}

type checkFlags struct {
	token, spec, model string
	calibrate          bool
	timeout            time.Duration
	cancelWithin       time.Duration
}

func newAgentCheckCmd() *cobra.Command {
	var f checkFlags
	cmd := &cobra.Command{
		Use:   "check TARGET",
		Short: "Check an agent's conformance to the device-agent protocol",
		Long: `check runs the conformance checks against the agent at TARGET
(tcp://HOST:PORT, usb://UDID:PORT or adb://SERIAL:PORT): its info and device
facts, the documented answer to a wrong token, malformed requests, an unknown path, an
oversize body, a slow client and an invalid spec, every request, busy,
cancel, and the units and sanity of the streamed measurements against the
result. It prints PASS, FAIL or SKIP per check and fails if any check fails.`,
		Example: `  lessim agent check tcp://127.0.0.1:7070 --token 0123… --model qwen3-30b-a3b
  lessim agent check usb://00008130-001A2B3C4D5E6F70:7070 --token 0123… --spec run.json --calibrate`,
		Args: oneArg,
		RunE: func(cmd *cobra.Command, args []string) error { return checkAgent(cmd, args[0], &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.token, "token", "", "the agent's token (default $"+tokenEnv+")")
	fl.StringVar(&f.spec, "spec", "", "JSON file with the run to use (default: "+agent.DefaultCheckSpec+")")
	fl.StringVar(&f.model, "model", "", "load this model first (and check load_model)")
	fl.BoolVar(&f.calibrate, "calibrate", false, "also check calibrate (it may take minutes on a device)")
	fl.DurationVar(&f.timeout, "silence", 15*time.Second, "longest the agent may stay silent during a request")
	fl.DurationVar(&f.cancelWithin, "cancel-within", agent.DefaultCancelWithin, "how soon a closed run must free the agent's engine (raise it on a loaded host)")
	return cmd
}

func checkAgent(cmd *cobra.Command, target string, f *checkFlags) error {
	if _, err := agent.ParseTarget(target); err != nil {
		return err
	}
	token, err := clientToken(f.token)
	if err != nil {
		return err
	}
	if f.cancelWithin <= 0 {
		return fmt.Errorf("--cancel-within %v: must be > 0", f.cancelWithin)
	}
	o := agent.CheckOptions{Model: f.model, Calibrate: f.calibrate, CancelWithin: f.cancelWithin, Client: agent.Options{Silence: f.timeout}}
	if f.spec != "" {
		b, err := experiment.ReadSpecFile(f.spec, cmd.InOrStdin())
		if err != nil {
			return err
		}
		if !json.Valid(b) {
			return fmt.Errorf("%s: not JSON", f.spec)
		}
		o.Spec = b
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "checking the agent at %s\n", target)
	counts := map[string]int{}
	var failed []string
	var unchecked error
	agent.Check(cmd.Context(), target, token, o, func(r agent.CheckResult) {
		if r.Unchecked() {
			unchecked = r.Err
		}
		counts[r.Outcome]++
		if r.Outcome == agent.CheckFail {
			failed = append(failed, r.Name)
		}
		fmt.Fprintf(out, "%s  %s: %s\n", r.Outcome, r.Name, oneLine(r.Detail))
	})
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", counts[agent.CheckPass], counts[agent.CheckFail], counts[agent.CheckSkip])
	if unchecked != nil {
		return fmt.Errorf("nothing checked: %v", unchecked)
	}
	if len(failed) > 0 {
		// The failed checks' names again, so that the last line of the
		// output (all a log may keep) says what failed.
		return fmt.Errorf("the agent does not conform: failed %s", strings.Join(failed, "; "))
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
