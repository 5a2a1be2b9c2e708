%% Erlang distribution between two nodes on loopback: the reference for
%% troupe-remote's remote_tell and remote_ask (troupe-remote-bench --erlang).
%%
%% Node b runs serve/0: a sink process that counts binaries and an echo
%% process. Node a runs run/1 with [BNode, Messages, Asks]:
%%   remote_tell: Messages binaries of 64 and of 1024 bytes sent with `!` to
%%     the sink's pid on node b (after a warm-up of Messages/10); then a
%%     {done, From, Total} that the sink answers once it has counted Total
%%     (one distribution channel keeps order, so it arrives after them all).
%%   remote_ask: Asks sequential {self(), Ref, I} -> {Ref, I} round trips to
%%     the echo pid (after Asks/10 of warm-up); p50 and p99.
%% Prints one JSON line per figure and halts. Launched by peer_erlang_dist.sh.
-module(peer_erlang_dist).
-export([serve/0, run/1]).

serve() ->
    register(sink, spawn(fun() -> sink(0) end)),
    register(echo, spawn(fun echo/0)),
    receive stop -> ok end.

sink(N) ->
    receive
        {blob, _Bin} -> sink(N + 1);
        {done, From, Total} when N >= Total -> From ! {count, N}, sink(N);
        {done, From, Total} -> wait(N, From, Total)
    end.

wait(N, From, Total) when N >= Total -> From ! {count, N}, sink(N);
wait(N, From, Total) -> receive {blob, _} -> wait(N + 1, From, Total) end.

echo() ->
    receive {From, Ref, I} -> From ! {Ref, I}, echo() end.

run([BNodeStr, MessagesStr, AsksStr]) ->
    BNode = list_to_atom(BNodeStr),
    Messages = list_to_integer(MessagesStr),
    Asks = list_to_integer(AsksStr),
    ok = connect(BNode, 500),
    Sink = rpc:call(BNode, erlang, whereis, [sink]),
    Echo = rpc:call(BNode, erlang, whereis, [echo]),
    Total0 = tell(Sink, 64, Messages div 10, 0),
    lists:foldl(fun(Size, Total) -> tell_figure(Sink, Size, Messages, Total) end, Total0, [64, 1024]),
    ask(Echo, Asks div 10),
    Lat = ask(Echo, Asks),
    Sorted = lists:sort(Lat),
    P50 = lists:nth(max(1, Asks div 2), Sorted) / 1000,
    P99 = lists:nth(max(1, Asks * 99 div 100), Sorted) / 1000,
    Mean = lists:sum(Lat) / Asks / 1000,
    io:format("{\"framework\":\"erlang\",\"workload\":\"remote_ask\",\"asks\":~b,\"p50_us\":~.1f,\"p99_us\":~.1f,\"mean_us\":~.1f}~n",
              [Asks, P50, P99, Mean]),
    rpc:call(BNode, erlang, halt, [0]),
    halt(0).

connect(_BNode, 0) -> {error, no_connection};
connect(BNode, Tries) ->
    case net_adm:ping(BNode) of
        pong -> ok;
        pang -> timer:sleep(20), connect(BNode, Tries - 1)
    end.

tell_figure(Sink, Size, Messages, Total) ->
    T0 = erlang:monotonic_time(nanosecond),
    Total1 = tell(Sink, Size, Messages, Total),
    Secs = (erlang:monotonic_time(nanosecond) - T0) / 1.0e9,
    io:format("{\"framework\":\"erlang\",\"workload\":\"remote_tell\",\"payload\":~b,\"messages\":~b,\"seconds\":~.6f,\"rate\":~.1f}~n",
              [Size, Messages, Secs, Messages / Secs]),
    Total1.

tell(Sink, Size, Count, Total) ->
    Bin = binary:copy(<<16#a5>>, Size),
    send(Sink, Bin, Count),
    NewTotal = Total + Count,
    Sink ! {done, self(), NewTotal},
    receive {count, NewTotal} -> NewTotal
    after 120000 -> erlang:error(sink_timeout)
    end.

send(_Sink, _Bin, 0) -> ok;
send(Sink, Bin, N) -> Sink ! {blob, Bin}, send(Sink, Bin, N - 1).

ask(Echo, Count) -> ask(Echo, Count, []).

ask(_Echo, 0, Acc) -> Acc;
ask(Echo, Count, Acc) ->
    Ref = make_ref(),
    T0 = erlang:monotonic_time(nanosecond),
    Echo ! {self(), Ref, Count},
    receive {Ref, Count} -> ok end,
    ask(Echo, Count - 1, [erlang:monotonic_time(nanosecond) - T0 | Acc]).
