package sdk

//go:generate go run ../internal/msgpgen model_gen.go -tests=false -io=false
//go:generate go run ../internal/msgprewrite -intern model_gen.go

//msgp:ignore Context SchedulerFunc Collector EvalState deviceAttribute GCThresholds CSIPlugin CSIVolumeRequest CSIClaimLive
//msgp:clearomitted
//msgp:marshal ignore NodeScoreMeta
