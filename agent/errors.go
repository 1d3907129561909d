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
	ErrAuth      = &RemoteError{Code: CodeAuth}        // the agent refused the token
	ErrBusy      = &RemoteError{Code: CodeBusy}        // the agent is running another request
	ErrCancelled = &RemoteError{Code: CodeCancelled}   // the agent stopped the request
	ErrRefused   = &RemoteError{Code: CodeInvalidSpec} // the engine refused the request (spec, model or options)

	ErrUnreachable = errors.New("agent unreachable")        // no connection to the target could be opened
	ErrSilent      = errors.New("agent stopped answering")  // no line, not even a heartbeat, within the silence limit
	ErrBadAgent    = errors.New("agent broke the protocol") // the agent sent what the protocol does not allow
	ErrNotAgent    = errors.New("not a lessim agent")       // what answers is not HTTP, or HTTP without an agent's answer
)
