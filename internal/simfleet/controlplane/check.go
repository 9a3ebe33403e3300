package controlplane

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// httpCheck is a readiness check: nil when a GET of url answers 200. A nil client is
// a plain one (etcd serves plain HTTP on loopback).
func httpCheck(client *http.Client, url string) func(context.Context) error {
	if client == nil {
		client = &http.Client{}
	}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("GET %s: %w", url, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s: %w", url, err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	}
}
