package prober

// schedule is a min-heap of workers by next run time (container/heap).
// Each worker's index is its position, or -1 while it is not queued.
type schedule []*worker

func (s schedule) Len() int           { return len(s) }
func (s schedule) Less(i, j int) bool { return s[i].next.Before(s[j].next) }
func (s schedule) Swap(i, j int) {
	s[i], s[j] = s[j], s[i]
	s[i].index = i
	s[j].index = j
}

func (s *schedule) Push(x any) {
	w := x.(*worker)
	w.index = len(*s)
	*s = append(*s, w)
}

func (s *schedule) Pop() any {
	old := *s
	n := len(old)
	w := old[n-1]
	old[n-1] = nil
	w.index = -1
	*s = old[:n-1]
	return w
}
