package cluster

import (
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"
)

// The dashboard is an HTTP page served by the scheduler: the cluster and worker tables, a plot
// of each worker's memory and utilization over time (GPU memory and utilization for GPU
// workers, host memory and thread occupancy for CPU workers), and the task stream. The page is
// one HTML file with inline CSS and JS and no network dependencies; it polls /api/state.

//go:embed dashboard.html
var dashboardPage []byte

// DashboardState is what the dashboard's /api/state returns.
type DashboardState struct {
	Now       time.Time           `json:"now"`
	Scheduler string              `json:"scheduler"`
	Uptime    float64             `json:"uptime_seconds"`
	Clients   int                 `json:"clients"`
	Threads   int                 `json:"threads"`
	Tasks     map[string]int      `json:"tasks"` // tasks the scheduler tracks, by state
	Done      int64               `json:"done"`
	Erred     int64               `json:"erred"`
	Workers   []WorkerInfo        `json:"workers"`
	History   map[string][]Sample `json:"history"`
	Stream    []TaskEvent         `json:"stream"`
}

// dashboardState snapshots the scheduler for the dashboard: history of the last window, and
// the task stream of the last window (at most 2000 events).
func (s *scheduler) dashboardState(window time.Duration) DashboardState {
	ws := s.workerInfo()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	st := DashboardState{Now: now, Scheduler: s.address(), Uptime: now.Sub(s.started).Seconds(), Clients: len(s.clients),
		Tasks: map[string]int{StateWaiting: 0, StateProcessing: 0, StateMemory: 0, StateErred: 0},
		Done:  s.done, Erred: s.erred, Workers: ws, History: map[string][]Sample{}}
	for _, w := range ws {
		st.Threads += w.NThreads
	}
	for _, t := range s.tasks {
		st.Tasks[t.state]++
	}
	from := now.Add(-window)
	for _, w := range ws {
		h := s.history[w.Name]
		i := sort.Search(len(h), func(i int) bool { return h[i].Time.After(from) })
		st.History[w.Name] = append([]Sample(nil), h[i:]...)
	}
	i := sort.Search(len(s.stream), func(i int) bool { return s.stream[i].Stop.After(from) })
	ev := s.stream[i:]
	if len(ev) > 2000 {
		ev = ev[len(ev)-2000:]
	}
	st.Stream = append([]TaskEvent{}, ev...)
	return st
}

// isLoopback reports whether host (an IP or name) is a loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackAddr reports whether the listen address "host:port" stays on loopback.
func loopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("address %q: %w", addr, err)
	}
	return isLoopback(host), nil
}

// hostCheck refuses requests whose Host header is not a loopback name or one of
// GPUNOTES_DASHBOARD_HOSTS (comma-separated), as Jupyter Server does when it listens on
// loopback: a page of another site that rebinds its DNS name to 127.0.0.1 cannot read the
// token-free loopback dashboard.
func hostCheck(next http.Handler, logf func(string, ...any)) http.Handler {
	extra := map[string]bool{}
	for _, h := range strings.Split(os.Getenv("GPUNOTES_DASHBOARD_HOSTS"), ",") {
		if h = strings.TrimSpace(strings.ToLower(h)); h != "" {
			extra[h] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.ToLower(strings.Trim(host, "[]"))
		if host != "localhost" && !strings.HasSuffix(host, ".localhost") && !isLoopback(host) && !extra[host] {
			logf("dashboard: refused %s: Host %q is not a loopback name (set GPUNOTES_DASHBOARD_HOSTS to allow it)", r.RemoteAddr, r.Host)
			http.Error(w, "forbidden: Host "+r.Host+" is not allowed (GPUNOTES_DASHBOARD_HOSTS)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// startDashboard serves the dashboard on addr ("host:port"). Beyond loopback it needs token,
// and every request must carry it (?token=, or the cookie the page sets). It returns the
// page's URL (with the token) and a stop function.
func (s *scheduler) startDashboard(addr, token string) (string, func(), error) {
	loop, err := loopbackAddr(addr)
	if err != nil {
		return "", nil, fmt.Errorf("dashboard: %w", err)
	}
	needToken := !loop
	if needToken && token == "" {
		return "", nil, fmt.Errorf("dashboard: refusing to serve on %s (beyond loopback) without a token", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("dashboard listen on %s: %w", addr, err)
	}
	authorized := func(r *http.Request) bool {
		if !needToken {
			return true
		}
		got := r.URL.Query().Get("token")
		if got == "" {
			if c, err := r.Cookie("gpunotes_token"); err == nil {
				got = c.Value
			}
		}
		return subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r) {
			s.logf("dashboard: refused %s: bad token", r.RemoteAddr)
			http.Error(w, "forbidden: the dashboard needs the cluster's token (?token=...)", http.StatusForbidden)
			return
		}
		if needToken {
			http.SetCookie(w, &http.Cookie{Name: "gpunotes_token", Value: token, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
		_, _ = w.Write(dashboardPage)
	})
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r) {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		window := 120 * time.Second
		if v, err := time.ParseDuration(r.URL.Query().Get("window")); err == nil && v > 0 && v <= time.Hour {
			window = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(s.dashboardState(window))
	})
	var handler http.Handler = mux
	if loop {
		handler = hostCheck(mux, s.logf)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logf("dashboard: %v", err)
		}
	}()
	u := "http://" + ln.Addr().String() + "/"
	if needToken {
		u += "?token=" + url.QueryEscape(token)
	}
	s.mu.Lock()
	s.dashURL = u
	s.mu.Unlock()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
	return u, stop, nil
}
