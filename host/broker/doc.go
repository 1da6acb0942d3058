// Package broker is the evaluation broker: priority queues of pending
// evaluations per scheduler type, delivered at least once to workers.
//
// A dequeued eval is outstanding under a token until the worker acks it
// (done) or nacks it (retry). An eval not acked within the nack timeout is
// nacked for the worker; the timeout is paused while the eval's plan waits
// in the plan queue. A nacked eval is redelivered after a nack delay, and
// after DeliveryLimit deliveries it goes to the failed queue, which the
// leader's reaper drains (the eval becomes failed and gets a
// failed-follow-up eval). Only one eval per job is in flight: later ones
// wait in the job's pending heap, and when the in-flight one is acked the
// one of highest priority (the newest among equals, as Nomad's) is
// enqueued and the rest are superseded ("cancelable"),
// canceled in batches through raft by the leader. Evals with WaitUntil (or
// Wait) sit in a delay heap until due. A reblocked eval that is unblocked
// while its worker still holds it is enqueued when that delivery is acked.
//
// The usage loop on the leader:
//
//	b, _ := broker.New(broker.DefaultConfig(), nil, observer)
//	b.SetEnabled(true)                 // on gaining leadership
//	go b.Run(ctx)                      // timers: delays and nack timeouts
//	b.Enqueue(eval)                    // for each pending eval committed
//	e, token, _ := b.Dequeue(ctx, []string{"service", "batch"})
//	... schedule e ...
//	b.Ack(e.ID, token)                 // or b.Nack(e.ID, token)
//
// Every decision reads the time from an injected Clock, and the timers are
// deadlines checked in Tick, so tests drive the broker without sleeping.
package broker
