// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";

/// @title PointsDistributor
/// @notice Pays the snapshots of one points season in one ERC-20 token, cumulatively: each leaf
/// is `[account, cumulativeAmount]`, and a claim pays what the account gained since its last
/// claim. So one contract serves every snapshot of a season, and a snapshot nobody claimed rolls
/// into the next (Morpho's Universal Rewards Distributor works the same way).
/// @dev The leaf is OpenZeppelin's StandardMerkleTree leaf of `["address", "uint256"]`, so a
/// points-ledger snapshot's `root`, and the `amount` and `proof` its API serves, claim as they are.
/// A new root waits `timelockSeconds` before anyone can accept it: a wrong or malicious root can
/// be seen and revoked before it pays anything.
contract PointsDistributor is Ownable {
    using SafeERC20 for IERC20;

    IERC20 public immutable token;
    uint256 public immutable timelockSeconds;

    /// @notice The root claims are checked against (zero before the first is accepted).
    bytes32 public root;
    /// @notice The root waiting for its timelock (zero when none).
    bytes32 public pendingRoot;
    /// @notice When `pendingRoot` can be accepted (a Unix time in seconds; zero when none).
    uint256 public acceptableAt;
    /// @notice What has been paid in all.
    uint256 public totalClaimed;
    /// @notice The cumulative amount already paid to each account.
    mapping(address account => uint256 cumulativeAmount) public claimed;

    event RootSubmitted(bytes32 root, uint256 acceptableAt);
    event RootAccepted(bytes32 root);
    /// @dev Not in the API's list of events: a revocation is a change of state that an indexer must see.
    event RootRevoked(bytes32 root);
    event Claimed(address indexed account, uint256 amount, uint256 cumulativeAmount);

    error InvalidProof();
    error NoPendingRoot();
    error TimelockNotExpired(uint256 acceptableAt);
    error ZeroRoot();

    constructor(address token_, address owner_, uint256 timelockSeconds_) Ownable(owner_) {
        token = IERC20(token_);
        timelockSeconds = timelockSeconds_;
    }

    /// @notice Makes `newRoot` the pending root (replacing any pending one); without a timelock it
    /// becomes the root at once.
    function submitRoot(bytes32 newRoot) external onlyOwner {
        if (newRoot == bytes32(0)) revert ZeroRoot();
        uint256 acceptableFrom = block.timestamp + timelockSeconds;
        emit RootSubmitted(newRoot, acceptableFrom);
        if (timelockSeconds == 0) {
            delete pendingRoot;
            delete acceptableAt;
            _accept(newRoot);
        } else {
            pendingRoot = newRoot;
            acceptableAt = acceptableFrom;
        }
    }

    /// @notice Anyone may accept the pending root once its timelock has passed.
    function acceptRoot() external {
        bytes32 pending = pendingRoot;
        if (pending == bytes32(0)) revert NoPendingRoot();
        if (block.timestamp < acceptableAt) revert TimelockNotExpired(acceptableAt);
        delete pendingRoot;
        delete acceptableAt;
        _accept(pending);
    }

    /// @notice Drops the pending root; the accepted root stays.
    function revokePendingRoot() external onlyOwner {
        bytes32 pending = pendingRoot;
        if (pending == bytes32(0)) revert NoPendingRoot();
        delete pendingRoot;
        delete acceptableAt;
        emit RootRevoked(pending);
    }

    /// @notice Pays `account` its `cumulativeAmount` less what it was already paid. Anyone may
    /// call it; the tokens always go to `account`. A leaf already claimed pays nothing and does not
    /// revert, so a claim page can resend without checking first.
    function claim(address account, uint256 cumulativeAmount, bytes32[] calldata proof) external {
        bytes32 leaf = keccak256(bytes.concat(keccak256(abi.encode(account, cumulativeAmount))));
        if (!MerkleProof.verifyCalldata(proof, root, leaf)) revert InvalidProof();
        uint256 already = claimed[account];
        if (cumulativeAmount <= already) return;
        uint256 amount = cumulativeAmount - already;
        // State first, transfer last: a token that calls back finds the claim already recorded.
        claimed[account] = cumulativeAmount;
        totalClaimed += amount;
        token.safeTransfer(account, amount);
        emit Claimed(account, amount, cumulativeAmount);
    }

    function _accept(bytes32 newRoot) private {
        root = newRoot;
        emit RootAccepted(newRoot);
    }
}
