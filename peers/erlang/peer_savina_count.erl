%% savina_count: Savina's counting actor. A producer process sends N `increment` messages
%% to the counter, then asks for the total with {get, self()}; the counter answers
%% {total, T} and the producer hands it to the driver. Check: T == N.
-module(peer_savina_count).
-export([run/1]).

counter(Total) ->
    receive
        increment -> counter(Total + 1);
        {get, From} -> From ! {total, Total}
    end.

producer(Counter, N, Driver) ->
    receive go -> ok end,
    send_increments(Counter, N),
    Counter ! {get, self()},
    receive {total, T} -> Driver ! {total, T} end.

send_increments(_, 0) -> ok;
send_increments(Counter, K) -> Counter ! increment, send_increments(Counter, K - 1).

run(#{increments := N}) ->
    Self = self(),
    Counter = spawn(fun() -> counter(0) end),
    Producer = spawn(fun() -> producer(Counter, N, Self) end),
    T0 = peer_savina:now_ns(),
    Producer ! go,
    Total = receive {total, T} -> T end,
    Secs = peer_savina:secs_since(T0),
    Total =:= N orelse peer_savina:fail("savina_count: counter has ~p, expected ~p", [Total, N]),
    {Secs, []}.
