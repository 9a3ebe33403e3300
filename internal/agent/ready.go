package agent

import "errors"

// Ready reports whether the agent's health engine has run its first round: nil once the
// health monitor has polled the GPUs (a poll that failed counts: it produced its finding),
// else why not. The agent's readiness probe (/readyz) answers with it.
func (a *Agent) Ready() error {
	if st := a.mon.Stats(); st.Polls+st.PollErrors == 0 {
		return errors.New("the health monitor has not polled the GPUs yet")
	}
	return nil
}
