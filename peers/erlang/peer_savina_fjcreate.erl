%% savina_fjcreate: Savina's fork-join creation. N times the driver spawns a process and
%% sends it one `msg`; the process reports `done` to the sink process when it handles it,
%% and ends; the sink tells the driver once it has N reports. Creation is inside the
%% measured phase. Check: N reports. (Savina's per-message arithmetic is left out, as the
%% contract says.) The sink is its own process so that the reports do not queue up in the
%% driver's mailbox while it spawns (and makes garbage).
-module(peer_savina_fjcreate).
-export([run/1]).

worker(Sink) ->
    receive msg -> Sink ! done end.

create(_, 0) -> ok;
create(Sink, K) ->
    Pid = spawn(fun() -> worker(Sink) end),
    Pid ! msg,
    create(Sink, K - 1).

sink(0, Driver) ->
    Driver ! sink_done,
    receive
        done -> peer_savina:fail("savina_fjcreate: more reports than expected", [])
    after 0 -> ok
    end;
sink(K, Driver) ->
    receive done -> sink(K - 1, Driver) end.

run(#{actors := N}) ->
    Self = self(),
    Sink = spawn(fun() -> sink(N, Self) end),
    T0 = peer_savina:now_ns(),
    create(Sink, N),
    receive sink_done -> ok end,
    Secs = peer_savina:secs_since(T0),
    {Secs, []}.
