module syncband/bench/peers/go

go 1.19
