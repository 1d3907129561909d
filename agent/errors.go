package agent

import "errors"

// RemoteError is an error the agent answered.
type RemoteError struct {
	Code    string
	Message string
}

// Error implements error.
func (e *RemoteError) Error() string {
	if e.Message == "" {
		return "agent: " + e.Code
	}
	return "agent: " + e.Code + ": " + e.Message
}

// Is matches any RemoteError with the same code, so errors.Is(err, ErrBusy)
// works on errors from the wire.
func (e *RemoteError) Is(target error) bool {
	t, ok := target.(*RemoteError)
	return ok && t.Code == e.Code
}

// Errors a client can test for with errors.Is.
var (
	// ErrAuth: the agent refused the token.
	ErrAuth = &RemoteError{Code: CodeAuth}
	// ErrBusy: the agent is running another request.
	ErrBusy = &RemoteError{Code: CodeBusy}
	// ErrCancelled: the agent stopped the request.
	ErrCancelled = &RemoteError{Code: CodeCancelled}
	// ErrRefused: the engine refused the request (invalid spec, model or options).
	ErrRefused = &RemoteError{Code: CodeInvalidSpec}

	// ErrUnreachable: no connection to the target could be opened.
	ErrUnreachable = errors.New("agent unreachable")
	// ErrSilent: the agent stopped answering (no line, not even a
	// heartbeat, within the client's silence limit).
	ErrSilent = errors.New("agent stopped answering")
	// ErrBadAgent: the agent sent something the protocol does not allow.
	ErrBadAgent = errors.New("agent broke the protocol")
	// ErrNotAgent: what answers at the target is not a lessim agent (not
	// HTTP, or HTTP without the agent's answer).
	ErrNotAgent = errors.New("not a lessim agent")
)
