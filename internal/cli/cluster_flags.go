package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// clusterFlags are the flags by which a command that talks to a cluster finds it, spelled
// and resolved as kubectl does: --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else
// the pod's service account; --context picks a context of that configuration.
type clusterFlags struct {
	kubeconfig string
	context    string
}

func (f *clusterFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fs.StringVar(&f.context, "context", "", "the kubeconfig context to use (default: its current context)")
}

// restConfig resolves the flags. No configuration at all, a missing file and an unknown
// context are usage errors that name what was looked for, never client-go's fallback to a
// server on localhost.
func (f *clusterFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
	cfg, err := cc.ClientConfig()
	switch {
	case err == nil:
		return cfg, nil
	case clientcmd.IsEmptyConfig(err) || errors.Is(err, clientcmd.ErrEmptyConfig):
		return nil, usageErrorf("no cluster to talk to: no kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config) and not running in a pod")
	case f.kubeconfig != "":
		return nil, usageErrorf("--kubeconfig %s: %w", f.kubeconfig, err)
	case f.context != "":
		return nil, usageErrorf("--context %q: %w", f.context, err)
	}
	return nil, usageError(fmt.Errorf("loading the kubeconfig: %w", err))
}
