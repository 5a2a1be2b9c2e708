%% savina_fjcreate: Savina's fork-join creation. N times the driver spawns a process and
%% sends it one `msg`; the process reports `done` to the driver (the sink) when it handles
%% it, and ends. Creation is inside the measured phase. Check: N reports. (Savina's
%% per-message arithmetic is left out, as the contract says.)
-module(peer_savina_fjcreate).
-export([run/1]).

worker(Sink) ->
    receive msg -> Sink ! done end.

create(_, 0) -> ok;
create(Sink, K) ->
    Pid = spawn(fun() -> worker(Sink) end),
    Pid ! msg,
    create(Sink, K - 1).

await(0) -> ok;
await(K) -> receive done -> await(K - 1) end.

run(#{actors := N}) ->
    T0 = peer_savina:now_ns(),
    create(self(), N),
    await(N),
    Secs = peer_savina:secs_since(T0),
    receive done -> peer_savina:fail("savina_fjcreate: more than ~p reports", [N])
    after 0 -> ok
    end,
    {Secs, []}.
