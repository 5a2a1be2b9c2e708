%% savina_threadring: Savina's thread ring. N processes in a ring, each spawned knowing its
%% successor (built back to front; the last learns the first by a message). The driver
%% sends {token, R} to the first; a process receiving {token, K} with K > 0 forwards
%% {token, K - 1} and counts the hop, the one receiving {token, 0} reports `done`. After the
%% measured phase every process answers `stop` with its hop count. Check: R hops in total.
-module(peer_savina_threadring).
-export([run/1]).

node(Next, Hops, Driver) ->
    receive
        {token, 0} -> Driver ! done, node(Next, Hops, Driver);
        {token, K} -> Next ! {token, K - 1}, node(Next, Hops + 1, Driver);
        {next, First} -> node(First, Hops, Driver);
        stop -> Driver ! {hops, Hops}
    end.

run(#{actors := N, passes := R}) ->
    Self = self(),
    Nodes = lists:foldl(fun(_, Acc) ->
                                Next = case Acc of [] -> undefined; [H | _] -> H end,
                                [spawn(fun() -> node(Next, 0, Self) end) | Acc]
                        end, [], lists:seq(1, N)),
    [First | _] = Nodes,
    lists:last(Nodes) ! {next, First},
    T0 = peer_savina:now_ns(),
    First ! {token, R},
    receive done -> ok end,
    Secs = peer_savina:secs_since(T0),
    [P ! stop || P <- Nodes],
    Hops = lists:sum(peer_savina:await_all(hops, N)),
    Hops =:= R orelse peer_savina:fail("savina_threadring: ~p hops, expected ~p", [Hops, R]),
    receive done -> peer_savina:fail("savina_threadring: the token ended twice", []) after 0 -> ok end,
    {Secs, []}.
