package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkBroker_EnqueueDequeueAck measures the broker alone: b.N evals of
// distinct jobs enqueued, then dequeued and acked by workers goroutines.
//
//	go test ./host/broker -run XXX -bench EnqueueDequeueAck -benchtime 200000x
func BenchmarkBroker_EnqueueDequeueAck(b *testing.B) {
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			br, err := New(DefaultConfig(), nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			br.SetEnabled(true)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go br.Run(ctx)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			per := b.N / workers
			for w := 0; w < workers; w++ {
				n := per
				if w == 0 {
					n += b.N % workers
				}
				wg.Add(1)
				go func(n int) {
					defer wg.Done()
					for i := 0; i < n; i++ {
						e, tok, err := br.Dequeue(ctx, []string{"service"})
						if err != nil {
							b.Error(err)
							return
						}
						if err := br.Ack(e.ID, tok); err != nil {
							b.Error(err)
							return
						}
					}
				}(n)
			}
			for i := 0; i < b.N; i++ {
				br.Enqueue(eval(fmt.Sprintf("e%d", i), fmt.Sprintf("j%d", i), 50, uint64(i+1)))
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "evals/s")
		})
	}
}
