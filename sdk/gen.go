package sdk

//go:generate go run github.com/tinylib/msgp@v1.6.5 -file . -o model_gen.go -tests=false -io=false
//go:generate go run ../internal/msgprewrite -intern model_gen.go

//msgp:ignore Context SchedulerFunc Collector EvalState deviceAttribute
//msgp:clearomitted
