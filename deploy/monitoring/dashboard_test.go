package monitoring

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

const dashboardFile = "grafana-dashboard.json"

// dashboard is the part of Grafana's dashboard model the tests read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Type       string          `json:"type"`
			Name       string          `json:"name"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
			Datasource *datasourceRef  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int                       `json:"id"`
	Type       string                    `json:"type"`
	Title      string                    `json:"title"`
	Datasource *datasourceRef            `json:"datasource"`
	GridPos    *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: not valid JSON: %v", dashboardFile, err)
	}
	return d
}

// allPanels flattens rows: every panel in display order.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// grafanaInterval is a Grafana interval variable; grafanaVariable any other variable.
var (
	grafanaInterval = regexp.MustCompile(`\$\{?__(rate_interval|interval|range)\}?`)
	grafanaVariable = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*(:[a-z]+)?\}?`)
)

// promqlOf turns a panel's query into PromQL: interval variables become durations, other
// variables (inside label matchers) a plain value.
func promqlOf(expr string) string {
	return grafanaVariable.ReplaceAllString(grafanaInterval.ReplaceAllString(expr, "5m"), "x")
}

func TestPromqlOfSubstitutesGrafanaVariables(t *testing.T) {
	got := promqlOf(`rate(m{Hostname=~"$Hostname", gpu=~"${gpu:regex}"}[$__rate_interval]) and n[${__range}]`)
	if want := `rate(m{Hostname=~"x", gpu=~"x"}[5m]) and n[5m]`; got != want {
		t.Errorf("promqlOf = %q, want %q", got, want)
	}
}

func TestDashboardIsAGrafanaDashboardWithItsVariables(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want a uid, a title and schemaVersion >= 36", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			t.Errorf("variable %s: datasource %+v, want the ${datasource} variable", v.Name, v.Datasource)
		}
	}
	for name, typ := range map[string]string{"datasource": "datasource", "Hostname": "query", "gpu": "query"} {
		if vars[name] != typ {
			t.Errorf("variable %s: type %q, want %q", name, vars[name], typ)
		}
	}
	ids := map[int]string{}
	for _, p := range allPanels(d.Panels) {
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d missing or shared with %q", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %q: no gridPos", p.Title)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no query", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want the ${datasource} variable", p.Title, p.Datasource)
		}
	}
}

func TestDashboardQueriesOnlyMetricsTheExportersServe(t *testing.T) {
	known := knownMetrics(t)
	d := loadDashboard(t)
	n := 0
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			n++
			unknown, err := unknownMetrics(promqlOf(tg.Expr), known)
			if err != nil {
				t.Errorf("panel %q query %s: %v", p.Title, tg.RefID, err)
			}
			if len(unknown) > 0 {
				t.Errorf("panel %q query %s uses %v: not in %s", p.Title, tg.RefID, unknown, metricsDoc)
			}
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*[A-Za-z_][A-Za-z0-9_]*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(SELECTOR, LABEL)", v.Name, v.Definition)
			continue
		}
		if unknown, err := unknownMetrics(promqlOf(m[1]), known); err != nil || len(unknown) > 0 {
			t.Errorf("variable %s: %q: unknown metrics %v, error %v", v.Name, v.Definition, unknown, err)
		}
	}
	if n < 20 {
		t.Errorf("found %d queries, want the fleet overview and the per-node panels", n)
	}
}

func TestPerNodePanelsFollowTheNodeAndGPUVariables(t *testing.T) {
	d := loadDashboard(t)
	perNode := false
	for _, p := range allPanels(d.Panels) {
		if p.Type == "row" {
			perNode = strings.Contains(p.Title, "$Hostname")
			continue
		}
		if !perNode {
			continue
		}
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, `Hostname=~"$Hostname"`) || !strings.Contains(tg.Expr, `gpu=~"$gpu"`) {
				t.Errorf("per-node panel %q query %s does not filter by $Hostname and $gpu: %s", p.Title, tg.RefID, tg.Expr)
			}
		}
	}
}
