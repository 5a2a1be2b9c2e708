%% savina_fjthrput: Savina's fork-join throughput. The driver process sends N `msg`
%% messages to each of A processes, interleaved (message i to process 1..A, then i+1); each
%% process counts its messages and reports {done, Count} to the driver after the N-th, then
%% stops. Check: A reports, each of exactly N. (Savina's per-message arithmetic is left out,
%% as the contract says.)
-module(peer_savina_fjthrput).
-export([run/1]).

worker(N, N, Driver) -> Driver ! {done, N};
worker(Got, N, Driver) ->
    receive msg -> worker(Got + 1, N, Driver) end.

send_rounds(_, 0) -> ok;
send_rounds(Workers, I) ->
    [W ! msg || W <- Workers],
    send_rounds(Workers, I - 1).

run(#{messages := N, actors := A}) ->
    Self = self(),
    Workers = [spawn(fun() -> worker(0, N, Self) end) || _ <- lists:seq(1, A)],
    T0 = peer_savina:now_ns(),
    send_rounds(Workers, N),
    Counts = peer_savina:await_all(done, A),
    Secs = peer_savina:secs_since(T0),
    [C =:= N orelse peer_savina:fail("savina_fjthrput: an actor counted ~p, expected ~p", [C, N])
     || C <- Counts],
    {Secs, []}.
