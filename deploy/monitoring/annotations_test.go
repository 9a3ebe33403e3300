package monitoring

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/template"
)

// templateDefs are the variables Prometheus's rule manager defines before an alert's
// label and annotation templates (rules/alerting.go).
const templateDefs = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}" +
	"{{$externalURL := .ExternalURL}}{{$value := .Value}}"

// renderAnnotation expands an annotation for one result series of an alert, as the rule
// manager does; query answers the template's query function.
func renderAnnotation(r rulefmt.Rule, name string, s promql.Sample, at time.Time, query template.QueryFunc) (string, error) {
	lbls := s.Metric.Map()
	delete(lbls, model.MetricNameLabel)
	data := template.AlertTemplateData(lbls, nil, "", s)
	exp := template.NewTemplateExpander(context.Background(), templateDefs+r.Annotations[name],
		"__alert_"+r.Alert, data, model.TimeFromUnixNano(at.UnixNano()), query, nil, nil)
	return exp.Expand()
}

// checkAnnotations renders the summary and the description of an alert for a result
// series and says what is wrong with them ("" when nothing): they must expand, name the
// node (the instance's host, or the node label) and, for a per-GPU series, the GPU; and
// GPUUnhealthy's description must name the required action it queries.
func checkAnnotations(r rulefmt.Rule, s promql.Sample, at time.Time, query template.QueryFunc) string {
	var problems []string
	host, _, _ := strings.Cut(s.Metric.Get("instance"), ":")
	if host == "" {
		host = s.Metric.Get("node")
	}
	for _, name := range []string{"summary", "description"} {
		text, err := renderAnnotation(r, name, s, at, query)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		case !strings.Contains(text, host):
			problems = append(problems, fmt.Sprintf("%s %q does not name node %q", name, text, host))
		case s.Metric.Get("gpu") != "" && !strings.Contains(text, "GPU "+s.Metric.Get("gpu")):
			problems = append(problems, fmt.Sprintf("%s %q does not name GPU %s", name, text, s.Metric.Get("gpu")))
		}
		if r.Alert == "GPUUnhealthy" && name == "description" && !strings.Contains(text, "required action: reset-gpu") &&
			!strings.Contains(text, "required action: reboot-node") && !strings.Contains(text, "required action: service") {
			problems = append(problems, fmt.Sprintf("description %q does not name the required action", text))
		}
	}
	return strings.Join(problems, "; ")
}

// queryFunc answers templates' queries over the series.
func queryFunc(series []memSeries) template.QueryFunc {
	return func(_ context.Context, q string, ts time.Time) (promql.Vector, error) {
		return evalInstant(series, q, ts)
	}
}
