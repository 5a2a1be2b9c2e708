%% savina_concdict: Savina's concurrent dictionary. A dictionary process holds an Erlang map
%% prefilled with keys 0..1023 (value = key) in its loop state. Worker i draws from
%% Rng(i + 1): per request key = below(1024), then {put, Key, Key, self()} (answered with
%% `ok`) when below(100) < P, else {get, Key, self()} (answered with {value, V}); it waits
%% for the answer before its next request, checks every read returned its key, and reports
%% {done, Replies} to the driver. Check: W*M replies, every read right.
-module(peer_savina_concdict).
-export([run/1]).

-define(KEYS, 1024).

dictionary(Map) ->
    receive
        {get, K, From} -> From ! {value, maps:get(K, Map, undefined)}, dictionary(Map);
        {put, K, V, From} -> From ! ok, dictionary(Map#{K => V});
        stop -> ok
    end.

worker(Dict, Seed, M, P, Driver) ->
    receive go -> ok end,
    Driver ! {done, requests(Dict, Seed, M, P, 0)}.

requests(_, _, 0, _, Replies) -> Replies;
requests(Dict, Rng, Left, P, Replies) ->
    {Key, Rng1} = peer_savina:below(?KEYS, Rng),
    {Dice, Rng2} = peer_savina:below(100, Rng1),
    case Dice < P of
        true ->
            Dict ! {put, Key, Key, self()},
            receive ok -> ok end;
        false ->
            Dict ! {get, Key, self()},
            receive
                {value, Key} -> ok;
                {value, V} -> peer_savina:fail("savina_concdict: read ~p, got ~p", [Key, V])
            end
    end,
    requests(Dict, Rng2, Left - 1, P, Replies + 1).

run(#{workers := W, requests := M, write_percent := P}) ->
    Self = self(),
    Map = maps:from_list([{K, K} || K <- lists:seq(0, ?KEYS - 1)]),
    Dict = spawn(fun() -> dictionary(Map) end),
    Workers = [spawn(fun() -> worker(Dict, I + 1, M, P, Self) end) || I <- lists:seq(0, W - 1)],
    T0 = peer_savina:now_ns(),
    [Wk ! go || Wk <- Workers],
    Replies = lists:sum(peer_savina:await_all(done, W)),
    Secs = peer_savina:secs_since(T0),
    Dict ! stop,
    Replies =:= W * M orelse
        peer_savina:fail("savina_concdict: ~p replies, expected ~p", [Replies, W * M]),
    {Secs, []}.
