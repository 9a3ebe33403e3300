package stack

import (
	"strings"
	"testing"
)

func TestSetupRefusesAReconcilerWithoutItsDependencies(t *testing.T) {
	err := (&Reconciler{}).SetupWithManager(nil)
	if err == nil {
		t.Fatal("SetupWithManager of an empty Reconciler succeeded")
	}
	for _, want := range []string{"no Client", "no Cache", "no Recorder", "no Clock", "no Namespace", "no manager"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
