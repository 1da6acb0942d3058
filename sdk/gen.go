package sdk

//go:generate go run github.com/tinylib/msgp@v1.6.5 -file . -o model_gen.go -tests=false -io=false

//msgp:ignore Context SchedulerFunc Collector EvalState deviceAttribute
