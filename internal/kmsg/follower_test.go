package kmsg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFollowerStartsWhereTheCursorSays(t *testing.T) {
	cases := []struct {
		name      string
		cursor    *Cursor
		start     StartMode
		script    [][]step
		want      []string
		wantStart string
		wantSaved Cursor
	}{
		{"with no cursor file every record of this boot is delivered", nil, StartCursor,
			[][]step{recs(0, 3)}, []string{"0", "1", "2", "3"}, "fresh", Cursor{"boot-a", 3}},
		{"a restart in the same boot resumes after the cursor", &Cursor{"boot-a", 5}, StartCursor,
			[][]step{recs(1, 8)}, []string{"6", "7", "8"}, "cursor", Cursor{"boot-a", 8}},
		{"a restart with nothing new delivers nothing and keeps the cursor", &Cursor{"boot-a", 3}, StartCursor,
			[][]step{recs(1, 3)}, []string{}, "cursor", Cursor{"boot-a", 3}},
		{"a restart after a reboot starts at the beginning of the new boot", &Cursor{"boot-old", 50}, StartCursor,
			[][]step{recs(0, 2)}, []string{"0", "1", "2"}, "reboot", Cursor{"boot-a", 2}},
		{"records overwritten while the follower was down are reported as a gap", &Cursor{"boot-a", 8}, StartCursor,
			[][]step{recs(10, 11)}, []string{"gap 9-9 (resume)", "10", "11"}, "cursor", Cursor{"boot-a", 11}},
		{"StartBeginning ignores the cursor and overwrites it", &Cursor{"boot-a", 5}, StartBeginning,
			[][]step{recs(1, 3)}, []string{"1", "2", "3"}, "beginning", Cursor{"boot-a", 3}},
		{"StartBoot delivers every record of this boot again and moves the cursor on", &Cursor{"boot-a", 5}, StartBoot,
			[][]step{recs(1, 8)}, []string{"1", "2", "3", "4", "5", "6", "7", "8"}, "boot", Cursor{"boot-a", 8}},
		{"StartBoot reports the records overwritten since the previous run stopped", &Cursor{"boot-a", 8}, StartBoot,
			[][]step{recs(12, 13)}, []string{"gap 9-11 (resume)", "12", "13"}, "boot", Cursor{"boot-a", 13}},
		{"StartBoot reports no gap when only records the previous run read were overwritten", &Cursor{"boot-a", 8}, StartBoot,
			[][]step{recs(5, 9)}, []string{"5", "6", "7", "8", "9"}, "boot", Cursor{"boot-a", 9}},
		{"StartBoot after a reboot reports no gap for the earlier boot's cursor", &Cursor{"boot-old", 2}, StartBoot,
			[][]step{recs(7, 8)}, []string{"7", "8"}, "boot", Cursor{"boot-a", 8}},
		{"StartBoot without a cursor file reads from boot and saves one", nil, StartBoot,
			[][]step{recs(0, 1)}, []string{"0", "1"}, "boot", Cursor{"boot-a", 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "kmsg.cursor")
			if tc.cursor != nil {
				if err := SaveCursor(state, *tc.cursor); err != nil {
					t.Fatal(err)
				}
			}
			f := &Follower{StatePath: state, BootID: "boot-a", Start: tc.start}
			items, err := followUntilIdle(t, f, newFakeKernel(tc.script...))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v, want context.Canceled", err)
			}
			if got := seqs(items); !slices.Equal(got, tc.want) {
				t.Errorf("delivered %v, want %v", got, tc.want)
			}
			if got := f.Stats().Start; got != tc.wantStart {
				t.Errorf("start = %q, want %q", got, tc.wantStart)
			}
			saved, ok, err := LoadCursor(state)
			if err != nil || !ok || saved != tc.wantSaved {
				t.Errorf("saved cursor = %+v, %v, %v; want %+v", saved, ok, err, tc.wantSaved)
			}
		})
	}
}

func TestStartEndDeliversOnlyNewRecords(t *testing.T) {
	k := newFakeKernel(recs(1, 3))
	f := &Follower{Start: StartEnd}
	items, err := followUntilIdle(t, f, k)
	if !errors.Is(err, context.Canceled) || len(items) != 0 || k.seekEnds != 1 {
		t.Fatalf("Run = %v, items %v, seekEnds %d; want cancel, none, 1", err, seqs(items), k.seekEnds)
	}
}

func TestRestartsInTheSameBootNeitherMissNorRepeatRecords(t *testing.T) {
	state := filepath.Join(t.TempDir(), "kmsg.cursor")
	k := newFakeKernel(recs(1, 5))
	var all []string
	for i, grow := range [][]step{recs(1, 5), recs(1, 9), recs(3, 12), recs(3, 12)} {
		k.set(grow) // the log grows (and its oldest records age out) between runs
		items, err := followUntilIdle(t, &Follower{StatePath: state, BootID: "boot-a"}, k)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("run %d: %v", i, err)
		}
		all = append(all, seqs(items)...)
	}
	want := []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"}
	if !slices.Equal(all, want) {
		t.Fatalf("over four runs delivered %v, want each of 1..12 once", all)
	}
}

func TestAnOverrunReportsTheGapAndContinues(t *testing.T) {
	k := newFakeKernel(recs(1, 2), []step{epipe}, recs(7, 8), []step{eagain, epipe}, recs(20, 20))
	f := &Follower{}
	items, err := followUntilIdle(t, f, k)
	if !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	want := []string{"1", "2", "gap 3-6 (overrun)", "7", "8", "gap 9-19 (overrun)", "20"}
	if got := seqs(items); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	st := f.Stats()
	if st.Overruns != 2 || st.Gaps != 2 || st.Lost != 15 || st.Delivered != 5 {
		t.Fatalf("stats %+v: want 2 overruns, 2 gaps, 15 lost, 5 delivered", st)
	}
}

func TestUserFacilityRecords(t *testing.T) {
	script := []step{rec(1, 0), rec(2, 1), rec(3, 1), rec(4, 0)}
	cases := []struct {
		name        string
		trust       bool
		want        []string
		wantDropped uint64
	}{
		{"are dropped and counted by default, since anyone who may write /dev/kmsg can forge them", false, []string{"1", "4"}, 2},
		{"are delivered when TrustUserRecords is set", true, []string{"1", "2", "3", "4"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "kmsg.cursor")
			f := &Follower{StatePath: state, BootID: "b", TrustUserRecords: tc.trust}
			items, _ := followUntilIdle(t, f, newFakeKernel(script))
			if got := seqs(items); !slices.Equal(got, tc.want) {
				t.Errorf("delivered %v, want %v", got, tc.want)
			}
			if got := f.Stats().UserDropped; got != tc.wantDropped {
				t.Errorf("dropped %d, want %d", got, tc.wantDropped)
			}
			if c, _, _ := LoadCursor(state); c.Seq != 4 {
				t.Errorf("cursor %+v: dropped records must still move it (to 4)", c)
			}
		})
	}
}

func TestACorruptCursorFileIsAnErrorNamingTheFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "kmsg.cursor")
	if err := os.WriteFile(state, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	k := newFakeKernel(recs(1, 2))
	f := &Follower{StatePath: state, BootID: "b", open: k.open}
	err := f.Run(context.Background(), func(Item) error { return nil })
	if !errors.Is(err, ErrBadCursor) || !strings.Contains(err.Error(), state) {
		t.Fatalf("Run = %v, want ErrBadCursor naming %s", err, state)
	}
	if k.opens != 0 {
		t.Fatalf("the log was opened %d times before the cursor was checked", k.opens)
	}
	// Told to start fresh, the follower reads everything and replaces the file.
	items, err := followUntilIdle(t, &Follower{StatePath: state, BootID: "b", Start: StartBeginning}, k)
	if !errors.Is(err, context.Canceled) || len(items) != 2 {
		t.Fatalf("fresh start: %v, %v", err, seqs(items))
	}
	if c, ok, err := LoadCursor(state); err != nil || !ok || c != (Cursor{"b", 2}) {
		t.Fatalf("after a fresh start the cursor is %+v, %v, %v", c, ok, err)
	}
}

func TestStartBootReportsAndReplacesAnUnusableCursorFile(t *testing.T) {
	for _, content := range []string{"{not json", `{"version":9,"bootID":"b","seq":1}`, ""} {
		state := filepath.Join(t.TempDir(), "kmsg.cursor")
		if err := os.WriteFile(state, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		var reported []error
		f := &Follower{StatePath: state, BootID: "b", Start: StartBoot, OnCursorError: func(err error) { reported = append(reported, err) }}
		items, err := followUntilIdle(t, f, newFakeKernel(recs(1, 2)))
		if !errors.Is(err, context.Canceled) || !slices.Equal(seqs(items), []string{"1", "2"}) {
			t.Fatalf("cursor %q: Run = %v, delivered %v; want every record from boot", content, err, seqs(items))
		}
		if len(reported) != 1 || !errors.Is(reported[0], ErrBadCursor) || !strings.Contains(reported[0].Error(), state) {
			t.Fatalf("cursor %q: reported %v, want one ErrBadCursor naming %s", content, reported, state)
		}
		if c, ok, err := LoadCursor(state); err != nil || !ok || c != (Cursor{"b", 2}) {
			t.Fatalf("cursor %q: replaced by %+v, %v, %v; want {b 2}", content, c, ok, err)
		}
		if f.Stats().BadCursors != 1 {
			t.Fatalf("stats %+v, want one bad cursor counted", f.Stats())
		}
	}
}

func TestACursorAheadOfTheLogIsAnError(t *testing.T) {
	state := filepath.Join(t.TempDir(), "kmsg.cursor")
	if err := SaveCursor(state, Cursor{"b", 500}); err != nil {
		t.Fatal(err)
	}
	_, err := followUntilIdle(t, &Follower{StatePath: state, BootID: "b"}, newFakeKernel(recs(1, 3)))
	if !errors.Is(err, ErrBadCursor) || !strings.Contains(err.Error(), "ahead") {
		t.Fatalf("Run = %v, want ErrBadCursor saying the cursor is ahead", err)
	}
}

func TestInterruptedReadsAndMalformedRecordsAreSurvived(t *testing.T) {
	k := newFakeKernel([]step{eintr, rec(1, 0), {rec: "garbage\n"}, eintr, rec(2, 0)})
	f := &Follower{}
	items, err := followUntilIdle(t, f, k)
	if !errors.Is(err, context.Canceled) || !slices.Equal(seqs(items), []string{"1", "2"}) || f.Stats().Malformed != 1 {
		t.Fatalf("Run = %v, items %v, stats %+v", err, seqs(items), f.Stats())
	}
}

func TestAHandlerErrorStopsRunAndTheRecordIsDeliveredAgain(t *testing.T) {
	state := filepath.Join(t.TempDir(), "kmsg.cursor")
	k := newFakeKernel(recs(1, 4))
	boom := errors.New("boom")
	f := &Follower{StatePath: state, BootID: "b", open: k.open}
	err := f.Run(context.Background(), func(it Item) error {
		if it.Record.Seq == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "record 3") {
		t.Fatalf("Run = %v, want boom naming record 3", err)
	}
	items, _ := followUntilIdle(t, &Follower{StatePath: state, BootID: "b"}, k)
	if got := seqs(items); !slices.Equal(got, []string{"3", "4"}) {
		t.Fatalf("after the failure the next run delivered %v, want 3 4", got)
	}
}

func TestTheEndOfTheInputEndsRun(t *testing.T) {
	k := newFakeKernel(recs(1, 2), []step{eof})
	f := &Follower{open: k.open}
	if err := f.Run(context.Background(), func(Item) error { return nil }); err != nil || f.Stats().Delivered != 2 {
		t.Fatalf("Run = %v, stats %+v; want nil after 2 records", err, f.Stats())
	}
}

func TestTheCursorIsSavedPerBatchNotPerRecord(t *testing.T) {
	cases := []struct {
		name      string
		script    [][]step
		interval  time.Duration
		wantSaves uint64
	}{
		{"two batches are two saves", [][]step{recs(1, 50), {eagain}, recs(51, 60)}, 0, 2},
		{"a batch that never runs dry is also saved every 1024 records", [][]step{recs(1, 2500)}, 0, 3},
		{"a batch within MinSaveInterval of the last save is saved on exit", [][]step{recs(1, 50), {eagain}, recs(51, 60)}, time.Hour, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "kmsg.cursor")
			k := newFakeKernel(tc.script...)
			f := &Follower{StatePath: state, BootID: "b", MinSaveInterval: tc.interval}
			items, err := followUntilIdle(t, f, k)
			if !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			if st := f.Stats(); st.Saves != tc.wantSaves {
				t.Fatalf("stats %+v: want %d saves", st, tc.wantSaves)
			}
			last := items[len(items)-1].Record.Seq
			if c, _, _ := LoadCursor(state); c.Seq != last {
				t.Fatalf("cursor %+v after exit, want %d", c, last)
			}
			if tc.interval > 0 {
				// Not yet due: Wait is given the time left until it is.
				if w := k.timeouts[len(k.timeouts)-1]; w <= 0 || w > tc.interval {
					t.Fatalf("last wait timeout %v, want the time until the next save is due", w)
				}
			}
		})
	}
}

func TestCancelStopsABlockedFollowerPromptly(t *testing.T) {
	k := newFakeKernel(recs(1, 1))
	f := &Follower{open: k.open}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, func(Item) error { return nil }) }()
	<-k.idle
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v", err)
		}
		t.Logf("stopped %v after cancel", time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatal("Run still running 5 s after cancel")
	}
}
